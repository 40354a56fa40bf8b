package termsafe_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe/termsafetest"
)

// Every escape class, written whole and a byte at a time, reaches the writer underneath
// escaped; newlines and tabs stay; text already escaped passes unchanged (no double escape).
func TestWriterEscapesEveryClass(t *testing.T) {
	for _, c := range termsafetest.Classes {
		in := "before " + c.Sample + " after\n"
		var whole, bytewise bytes.Buffer
		w := termsafe.NewWriter(&whole)
		if n, err := w.Write([]byte(in)); err != nil || n != len(in) {
			t.Fatalf("%s: %d, %v", c.Name, n, err)
		}
		bw := termsafe.NewWriter(&bytewise)
		for i := 0; i < len(in); i++ {
			bw.Write([]byte{in[i]})
		}
		termsafetest.Check(t, c.Name, whole.Bytes())
		termsafetest.Check(t, c.Name+" (a byte at a time)", bytewise.Bytes())
		if whole.String() != bytewise.String() {
			t.Errorf("%s: %q whole, %q a byte at a time", c.Name, whole.String(), bytewise.String())
		}
		if !strings.HasPrefix(whole.String(), "before ") || !strings.HasSuffix(whole.String(), " after\n") {
			t.Errorf("%s: %q", c.Name, whole.String())
		}
		// Escaped once only.
		var again bytes.Buffer
		termsafe.NewWriter(&again).Write([]byte(termsafe.String(c.Sample)))
		if again.String() != termsafe.String(c.Sample) {
			t.Errorf("%s: escaped twice: %q", c.Name, again.String())
		}
	}
	var b bytes.Buffer
	termsafe.NewWriter(&b).Write([]byte("a\tb\nc — ü 日本 🙂\n"))
	if b.String() != "a\tb\nc — ü 日本 🙂\n" {
		t.Errorf("printable text changed: %q", b.String())
	}
}

// Lines keeps the lines of a message apart, escaped, and indents all but the first.
func TestLines(t *testing.T) {
	got := termsafe.Lines("first\x1b[2J\nlimactl-mcp: forged\u202e", "  ")
	if got != `first\x1b[2J`+"\n  "+`limactl-mcp: forged\u202e` {
		t.Errorf("%q", got)
	}
	termsafetest.Check(t, "Lines", []byte(got))
}
