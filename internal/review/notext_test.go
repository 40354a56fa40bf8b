package review

import (
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

func TestNoTextNoteSaysWhatAndSizes(t *testing.T) {
	file := func(n int64) *tree.Entry { return &tree.Entry{Type: tree.File, Size: n, Mode: 0o644} }
	for _, c := range []struct {
		b, g       *tree.Entry
		oBin, nBin bool
		want       string
	}{
		{file(1229), file(1434), true, true, "binary file changed (1.2 KB → 1.4 KB)"},
		{nil, file(100), false, true, "binary file (100 B)"},
		{file(5 << 20), nil, false, false, "large file (5.0 MB), over the 4.0 MB a review shows as text"},
		{file(10), file(5 << 20), false, false, "large file changed (10 B → 5.0 MB), over the 4.0 MB a review shows as text"},
	} {
		if got := noTextNote(c.b, c.g, c.oBin, c.nBin); got != c.want {
			t.Errorf("noTextNote = %q, want %q", got, c.want)
		}
	}
}
