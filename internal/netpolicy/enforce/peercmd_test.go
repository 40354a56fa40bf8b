package enforce

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// FuzzFormatCmdline: whatever a process puts in its command line (the agent's to write), the
// record gets one line of valid UTF-8 within the bound ParseEntry checks, and a short one as
// it was, its NULs as spaces.
func FuzzFormatCmdline(f *testing.F) {
	for _, seed := range []string{"curl\x00-sS\x00https://a.test/\x00", "", "\x00\x00", "\xff\xfe\x00x", strings.Repeat("é", 300), strings.Repeat("a\x00", 200), "\x1b[2J\x00\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		s := formatCmdline(raw)
		if !utf8.ValidString(s) || len(s) > netpolicy.MaxEntryCommand {
			t.Fatalf("formatCmdline(%q) = %q: %d bytes, valid %v", raw, s, len(s), utf8.ValidString(s))
		}
		e := netpolicy.Entry{Time: time.Unix(1767322000, 0), Host: "a.test", Port: 443, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaProxy, Command: s}
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := netpolicy.ParseEntry(line); !ok || got.Command != s {
			t.Fatalf("an entry with the command %q does not check out on the host (%q)", s, line)
		}
		if in := strings.TrimRight(string(raw), "\x00"); utf8.ValidString(in) && len(in) <= netpolicy.MaxEntryCommand && s != strings.ReplaceAll(in, "\x00", " ") {
			t.Fatalf("formatCmdline(%q) = %q, want it as it was", raw, s)
		}
	})
}
