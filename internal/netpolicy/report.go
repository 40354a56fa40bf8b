package netpolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Record is `net report`'s answer: a user's network record, for status and review. Only root
// reads the record and the log (0600), so the host asks root's runner for them.
type Record struct {
	User string `json:"user"`
	// Source is "totals" (the record the proxy keeps) or "log" (no record yet: what the raw
	// log still holds, as an earlier version's proxy left it).
	Source  string  `json:"source"`
	Summary Summary `json:"summary"`
	// Entries are the raw log's last entries, oldest first.
	Entries []Entry `json:"entries,omitempty"`
}

const (
	// maxRawLog bounds what is read of each raw log file (it rotates at maxLogSize).
	maxRawLog = 2 * maxLogSize
	// MaxReportEntries bounds Record.Entries.
	MaxReportEntries = 500
	// MaxRecordBytes bounds a Record's JSON (what the host reads of `net report`).
	MaxRecordBytes = 8 << 20
)

// Report reads user's record (its totals, and the last entries of its raw log).
func Report(l Layout, user string, entries int) (Record, error) {
	if os.Geteuid() != 0 {
		return Record{}, errors.New("net report must run as root (the network record is root's alone)")
	}
	if err := CheckUserName(user); err != nil {
		return Record{}, err
	}
	if entries < 0 || entries > MaxReportEntries {
		return Record{}, fmt.Errorf("--entries %d: not 0 to %d", entries, MaxReportEntries)
	}
	var raw []byte
	for _, p := range []string{l.logFile(user) + ".1", l.logFile(user)} {
		data, err := readRootFile(p, maxRawLog)
		if err != nil {
			return Record{}, err
		}
		raw = append(raw, data...)
		if len(raw) > 0 && raw[len(raw)-1] != '\n' {
			raw = append(raw, '\n')
		}
	}
	sum, last, err := ReadLog(bytes.NewReader(raw), entries)
	if err != nil {
		return Record{}, err
	}
	rec := Record{User: user, Source: "log", Summary: sum, Entries: last}
	t, found, err := readTotals(l.totalsFile(user))
	if err != nil {
		return Record{}, err
	}
	if found {
		rec.Source, rec.Summary = "totals", t.Summary()
	}
	return rec, nil
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

// ParseRecord reads `net report`'s answer (guest output: checked, not trusted) for user.
func ParseRecord(data []byte, user string) (Record, error) {
	if len(data) > MaxRecordBytes {
		return Record{}, fmt.Errorf("the network record is larger than %d bytes", MaxRecordBytes)
	}
	var r Record
	if err := json.Unmarshal(bytes.TrimSpace(data), &r); err != nil {
		return Record{}, fmt.Errorf("the network record is not JSON: %w", err)
	}
	s := &r.Summary
	bad := r.User != user || (r.Source != "totals" && r.Source != "log") || len(r.Entries) > MaxReportEntries ||
		s.Attempts < 0 || s.Allowed < 0 || s.Blocked < 0 || s.Suppressed < 0 || s.Unreadable < 0 || s.BytesUp < 0 || s.BytesDown < 0 ||
		len(s.HostsReached) > maxTotalsHosts || len(s.HostsBlocked) > maxTotalsHosts
	for _, h := range append(append([]HostSummary(nil), s.HostsReached...), s.HostsBlocked...) {
		bad = bad || h.Host == "" || len(h.Host) > 512 || h.Attempts < 0 || h.BytesUp < 0 || h.BytesDown < 0
	}
	for _, e := range r.Entries {
		line, _ := json.Marshal(e)
		if _, ok := parseEntry(line); !ok {
			bad = true
		}
	}
	if s.LastBlocked != nil {
		line, _ := json.Marshal(s.LastBlocked)
		if _, ok := parseEntry(line); !ok {
			bad = true
		}
	}
	if bad {
		return Record{}, errors.New("the network record does not check out")
	}
	return r, nil
}
