package review_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// The changed guest files are read ahead in batches, up to a bound in all; the files past a
// batch's or the whole bound are read one at a time. Every item comes out the same either way:
// here with bounds of a few files (batches of one 22-byte file, 9 files read ahead, 3 past the
// bound read alone, an empty file), so that one build takes every path. Each item's hash is
// its shown content's, taken on the host from the bytes read ahead or by the runner.
func TestBuildReadsAheadWithinBounds(t *testing.T) {
	f := bareFx(t, "readahead")
	for i := range 12 {
		f.write(fmt.Sprintf("many/f%02d.txt", i), fmt.Sprintf("file %02d\nsame\n", i), 0o644)
	}
	f.write("many/empty.txt", "x\n", 0o644)
	f.open()
	f.guest(`cd many && for i in 00 01 02 03 04 05 06 07 08 09 10 11; do echo "added $i" >> f$i.txt; done && : > empty.txt`)
	defer review.SetGuestTextsBounds(40, 200)()
	cs := f.build()
	seen := 0
	for _, it := range cs.Items {
		if !strings.HasPrefix(it.Path, "many/") {
			continue
		}
		seen++
		if it.Refused != "" {
			t.Errorf("%s refused: %s", it.Path, it.Refused)
			continue
		}
		// The hash apply checks the guest against is the shown content's, whether Build took
		// it from the bytes read ahead or the runner hashed the file (past the bound).
		if it.Guest == nil || it.Guest.Hash != tree.Hash([]byte(it.GuestText)) {
			t.Errorf("%s: guest entry %+v, want the hash of its text %q", it.Path, it.Guest, it.GuestText)
		}
		if it.Path == "many/empty.txt" {
			if it.GuestText != "" || it.Removed != 1 {
				t.Errorf("%s: guest text %q, %d removed", it.Path, it.GuestText, it.Removed)
			}
			continue
		}
		n := strings.TrimSuffix(strings.TrimPrefix(it.Path, "many/f"), ".txt")
		if want := "file " + n + "\nsame\nadded " + n + "\n"; it.GuestText != want || it.Added != 1 || len(it.Hunks) != 1 {
			t.Errorf("%s: guest text %q (+%d, %d hunks), want %q", it.Path, it.GuestText, it.Added, len(it.Hunks), want)
		}
	}
	if seen != 13 {
		t.Errorf("%d items under many/, want 13", seen)
	}
}
