package netpolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
	// Changes are the last changes of the user's policy in the guest, oldest first.
	Changes []PolicyChange `json:"changes,omitempty"`
	// Held are the connections the proxy holds while the person watching decides (only while
	// a watch reads the record: see HeldConn).
	Held []HeldConn `json:"held,omitempty"`
}

const (
	// MaxReportEntries bounds Record.Entries.
	MaxReportEntries = 500
	// MaxRecordBytes bounds a Record's JSON (what the host reads of `net report`).
	MaxRecordBytes = 8 << 20
)

// MaxReportEach is how many users one `net report --users` reads.
const MaxReportEach = 256

// ReportError is the line `net report --users` writes for a user whose record it could not read.
type ReportError struct {
	User  string `json:"user"`
	Error string `json:"error"`
}

// maxReportError bounds the words of a ReportError kept on the host.
const maxReportError = 512

// ParseRecordLine reads user's line of `net report --users` (guest output: checked, not
// trusted): its record, or the error the guest gave for it.
func ParseRecordLine(line []byte, user string) (Record, error) {
	var e ReportError
	if len(line) <= 4*maxReportError && json.Unmarshal(bytes.TrimSpace(line), &e) == nil && e.Error != "" {
		if e.User != user {
			return Record{}, fmt.Errorf("the network record's line is another user's, not %s's", user)
		}
		if len(e.Error) > maxReportError {
			e.Error = e.Error[:maxReportError] + "…"
		}
		return Record{}, errors.New(e.Error)
	}
	return ParseRecord(line, user)
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
		len(s.HostsReached) > MaxTotalsHosts || len(s.HostsBlocked) > MaxTotalsHosts
	for _, h := range append(append([]HostSummary(nil), s.HostsReached...), s.HostsBlocked...) {
		bad = bad || h.Host == "" || len(h.Host) > 512 || h.Attempts < 0 || h.BytesUp < 0 || h.BytesDown < 0
	}
	bad = bad || len(r.Changes) > MaxRecordChanges
	for _, c := range r.Changes {
		bad = bad || !c.valid()
	}
	bad = bad || len(r.Held) > MaxHeldPerUser
	for _, h := range r.Held {
		bad = bad || !h.valid()
	}
	for _, e := range r.Entries {
		line, _ := json.Marshal(e)
		if _, ok := ParseEntry(line); !ok {
			bad = true
		}
	}
	if s.LastBlocked != nil {
		line, _ := json.Marshal(s.LastBlocked)
		if _, ok := ParseEntry(line); !ok {
			bad = true
		}
	}
	if bad {
		return Record{}, errors.New("the network record does not check out")
	}
	return r, nil
}
