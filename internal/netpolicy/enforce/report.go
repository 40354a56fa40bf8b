package enforce

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// maxRawLog bounds what is read of each raw log file (it rotates at maxLogSize).
const maxRawLog = 2 * maxLogSize

// Report reads user's record (its totals, and the last entries of its raw log).
func Report(l Layout, user string, entries int) (netpolicy.Record, error) {
	if os.Geteuid() != 0 {
		return netpolicy.Record{}, errors.New("net report must run as root (the network record is root's alone)")
	}
	if err := CheckUserName(user); err != nil {
		return netpolicy.Record{}, err
	}
	if entries < 0 || entries > netpolicy.MaxReportEntries {
		return netpolicy.Record{}, fmt.Errorf("--entries %d: not 0 to %d", entries, netpolicy.MaxReportEntries)
	}
	var raw []byte
	for _, p := range []string{l.logFile(user) + ".1", l.logFile(user)} {
		data, err := readRootFile(p, maxRawLog)
		if err != nil {
			return netpolicy.Record{}, err
		}
		raw = append(raw, data...)
		if len(raw) > 0 && raw[len(raw)-1] != '\n' {
			raw = append(raw, '\n')
		}
	}
	sum, last, err := netpolicy.ReadLog(bytes.NewReader(raw), entries)
	if err != nil {
		return netpolicy.Record{}, err
	}
	rec := netpolicy.Record{User: user, Source: "log", Summary: sum, Entries: last}
	t, found, err := readTotals(l.totalsFile(user))
	if err != nil {
		return netpolicy.Record{}, err
	}
	if found {
		rec.Source, rec.Summary = "totals", t.Summary()
	}
	if rec.Changes, err = readChanges(l, user); err != nil {
		return netpolicy.Record{}, err
	}
	// The held connections are the watch's: a pending file that does not read leaves them out,
	// never the record (status reads it too).
	rec.Held, _ = heldConns(l, user)
	return rec, nil
}

// ReportEach writes to w one line for each of users, in order: its record (Report's, without
// raw entries) as JSON, or {"user": ..., "error": ...} when it cannot be read. `status` reads the
// records of all its sessions under a policy with one sudo instead of one each (0.3 s of a PAM
// session each on an emulated guest). Names past netpolicy.MaxReportEach get an error line.
func ReportEach(l Layout, users []string, w io.Writer) {
	for i, user := range users {
		var rec netpolicy.Record
		err := fmt.Errorf("more than %d users in one report", netpolicy.MaxReportEach)
		if i < netpolicy.MaxReportEach {
			rec, err = Report(l, user, 0)
		}
		line, _ := json.Marshal(rec)
		if err != nil {
			line, _ = json.Marshal(netpolicy.ReportError{User: user, Error: err.Error()})
		}
		fmt.Fprintf(w, "%s\n", line)
	}
}

// readRootFile reads at most max bytes of a regular file without following a symbolic link;
// nothing when it does not exist.
func readRootFile(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size() > max {
		// The newest part is what counts: skip to the last max bytes (the first line read is cut,
		// and counted unreadable).
		if _, err := f.Seek(st.Size()-max, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, max))
}
