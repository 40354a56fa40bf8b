package preview

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/fsutil"
)

// A record is one server's forwards, in DIR/SERVEPID.json (DIR: the instance's host state,
// `limactl-mcp/ports`), written on every change and removed when the server ends. A record
// whose server is gone (killed) is ignored by readers and removed by the next server that
// writes one. It is the host's own file: nothing in it came from the guest unchecked (the
// ports were checked by the runner's client).

// Record is what one server recorded.
type Record struct {
	// ServePID is the pid of the serve (or, with Shell, of the `limactl mcp shell`) that
	// forwards the ports.
	ServePID int `json:"serve_pid"`
	// Shell says the ports are those of a `limactl mcp shell` command's processes (their Port.ID
	// is 0), not of serve's background processes.
	Shell     bool   `json:"shell,omitempty"`
	SessionID string `json:"session_id"`
	// Session is the session's name ("" for the unnamed one); Workdir its working directory.
	Session string `json:"session,omitempty"`
	Workdir string `json:"workdir"`
	Ports   []Port `json:"ports"`
}

// RecordFile is where a server writes its Record.
type RecordFile struct {
	Dir string
	Record
}

func (r *RecordFile) path() string { return filepath.Join(r.Dir, strconv.Itoa(r.ServePID)+".json") }

// Save writes the record with ports (and removes the records of servers that are gone).
func (r *RecordFile) Save(ports []Port) error {
	if err := os.MkdirAll(r.Dir, 0o700); err != nil {
		return err
	}
	rec := r.Record
	rec.Ports = ports
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(r.path(), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("recording the forwarded ports: %w", err)
	}
	removeStale(r.Dir)
	return nil
}

// Remove removes the record.
func (r *RecordFile) Remove() { _ = os.Remove(r.path()) }

// Caps on what readers look at.
const (
	maxRecords    = 256
	maxRecordSize = 1 << 20
)

// ReadRecords reads the records in dir of the servers that are alive, by server pid.
func ReadRecords(dir string) ([]Record, error) {
	var out []Record
	err := eachRecord(dir, func(pid int, path string) {
		if !processAlive(pid) {
			return
		}
		f, err := os.Open(path)
		if err != nil {
			return
		}
		defer f.Close()
		var rec Record
		if json.NewDecoder(io.LimitReader(f, maxRecordSize)).Decode(&rec) == nil && rec.ServePID == pid {
			out = append(out, rec)
		}
	})
	slices.SortFunc(out, func(a, b Record) int { return a.ServePID - b.ServePID })
	return out, err
}

// removeStale removes the records of servers that are gone.
func removeStale(dir string) {
	_ = eachRecord(dir, func(pid int, path string) {
		if !processAlive(pid) {
			_ = os.Remove(path)
		}
	})
}

func eachRecord(dir string, f func(pid int, path string)) error {
	d, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	names, _ := d.Readdirnames(maxRecords)
	d.Close()
	for _, n := range names {
		s, ok := strings.CutSuffix(n, ".json")
		pid, err := strconv.Atoi(s)
		if !ok || err != nil || pid < 1 || strconv.Itoa(pid) != s {
			continue
		}
		f(pid, filepath.Join(dir, n))
	}
	return nil
}
