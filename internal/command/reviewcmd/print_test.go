package reviewcmd

import (
	"bytes"
	"strings"
	"testing"
	"unicode"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
)

// Plain-text summaries never pass a raw control or bidi character from the guest to the
// terminal, whatever field carries it (a name, a refusal quoting an OS error, a plan line).
func TestPlainTextOutputEscapesGuestText(t *testing.T) {
	hostile := "x\x1b[2J\u202egnp.exe\nfake line\x07"
	cs := &review.Changeset{
		Items: []*review.Item{{Path: hostile, Display: hostile, Refused: "lstat " + hostile + ": no such file"}, {Path: "c", Display: "c\u2066", Conflict: true, Description: "symlink -> " + hostile},
			{Path: "d", Display: "d", Conflict: true, Collides: []string{hostile}}},
		Ignored: []*review.Item{{Path: hostile, Display: hostile, Refused: hostile}},
	}
	var b bytes.Buffer
	printSummary(&b, cs)
	printConflicts(&b, cs, hostile)
	printRefused(&b, []string{hostile + ": " + hostile})
	out := b.String()
	for _, r := range out {
		if r != '\n' && (unicode.IsControl(r) || unicode.In(r, unicode.Cf)) {
			t.Fatalf("raw %U reached the terminal:\n%q", r, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 8 {
		t.Errorf("a name added lines of its own (%d lines):\n%s", n, out)
	}
}
