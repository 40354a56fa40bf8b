package enforce

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/limactl-mcp/limactl-mcp/internal/atomicfile"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// maxTotalsFile bounds what is read of a totals file.
const maxTotalsFile = 1 << 20

func (l Layout) totalsFile(user string) string { return filepath.Join(l.LogDir, user+".totals.json") }

// readTotals reads a totals file (root's, read as hostile all the same: capped, checked by
// netpolicy.ParseTotals); found is false when there is none.
func readTotals(path string) (t *netpolicy.Totals, found bool, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return netpolicy.NewTotals(), false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTotalsFile+1))
	if err != nil {
		return nil, false, err
	}
	if len(data) > maxTotalsFile {
		return nil, false, fmt.Errorf("%s is larger than %d bytes", path, maxTotalsFile)
	}
	if t, err = netpolicy.ParseTotals(data); err != nil {
		if errors.Is(err, netpolicy.ErrTotalsVersion) {
			return nil, false, fmt.Errorf("%s is not a network record this version writes", path)
		}
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	return t, true, nil
}

// writeTotals replaces the totals file atomically: a new file (0600: only root reads a record,
// no agent reads another's) renamed over the old one in root's directory.
func writeTotals(path string, t *netpolicy.Totals) error {
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	// The guest's one atomic write: a new file beside it (O_EXCL, no link followed), fsync,
	// rename; 0600, root's alone. It runs at most once per totalsEvery per user.
	return atomicfile.WriteFile(path, append(data, '\n'), 0o600, true)
}
