package review

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/fsutil"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Journal states.
const (
	statePrepared   = "prepared"    // backups written, host writes may be under way
	stateCommitted  = "committed"   // every host write done
	stateRolledBack = "rolled-back" // an interrupted apply was undone
	stateUndone     = "undone"      // undone by `review --undo`
)

// journal records one apply: for every path, the host's state before and after (with the
// content of files kept in the journal's directory) and the baseline before and after, so an
// apply can be undone, and an interrupted one rolled back, without the guest.
type journal struct {
	ID      string         `json:"id"`
	Time    time.Time      `json:"time"`
	State   string         `json:"state"`
	Entries []journalEntry `json:"entries"`
	dir     string
}

type journalEntry struct {
	Path       string      `json:"path"`
	Before     *tree.Entry `json:"before,omitempty"`
	BeforeBlob string      `json:"before_blob,omitempty"`
	After      *tree.Entry `json:"after,omitempty"`
	AfterBlob  string      `json:"after_blob,omitempty"`
	BaseBefore *tree.Entry `json:"base_before,omitempty"`
	BaseAfter  *tree.Entry `json:"base_after,omitempty"`
	// HostOp says the host is written for this path (false: only the baseline moves).
	HostOp bool `json:"host_op"`
	// Pair is the other half of a rename under the host's name rule (the old name's removal,
	// the new name's write): both are done and undone, or neither.
	Pair string `json:"pair,omitempty"`
	// NotWritten says the write was refused or failed when it was tried: the host and the
	// baseline were left as they were, and undo skips it.
	NotWritten bool `json:"not_written,omitempty"`
}

func newJournal(backupDir string) (*journal, error) {
	id := time.Now().UTC().Format("20060102T150405.000000000Z")
	j := &journal{ID: id, Time: time.Now().UTC(), dir: filepath.Join(backupDir, id)}
	return j, os.MkdirAll(j.dir, 0o700)
}

func (j *journal) blobPath(name string) string { return filepath.Join(j.dir, name) }

func (j *journal) save(state string) error {
	j.State = state
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(filepath.Join(j.dir, "journal.json"), data, 0o600)
}

// journals lists the journals of a session, newest first.
func journals(backupDir string) ([]*journal, error) {
	ents, err := os.ReadDir(backupDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*journal
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(backupDir, e.Name(), "journal.json"))
		if err != nil {
			continue // an apply that died before its journal existed wrote nothing to the host
		}
		var j journal
		if err := json.Unmarshal(data, &j); err != nil {
			return nil, fmt.Errorf("journal %s is corrupt: %w", e.Name(), err)
		}
		j.dir = filepath.Join(backupDir, e.Name())
		out = append(out, &j)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID > out[b].ID })
	return out, nil
}
