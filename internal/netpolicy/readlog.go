package netpolicy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"time"
)

// Summary is what a record (Totals) or a log says, for status and review: "the agent reached
// 2 hosts, 3 attempts blocked".
type Summary struct {
	Attempts     int           `json:"attempts"`
	Allowed      int           `json:"allowed"`
	Blocked      int           `json:"blocked"`
	BytesUp      int64         `json:"bytes_up"`
	BytesDown    int64         `json:"bytes_down"`
	HostsReached []HostSummary `json:"hosts_reached,omitempty"` // allowed hosts, most attempts first
	HostsBlocked []HostSummary `json:"hosts_blocked,omitempty"` // blocked hosts, most attempts first
	LastBlocked  *Entry        `json:"last_blocked,omitempty"`
	// Unreadable counts lines that are not log entries (cut, garbage, too long): skipped.
	Unreadable int `json:"unreadable,omitempty"`
	// First and Last are the times of the first and last attempt.
	First *time.Time `json:"first,omitempty"`
	Last  *time.Time `json:"last,omitempty"`
	// Suppressed counts refused attempts the raw log left out (rate-limited per destination);
	// they are in Blocked and HostsBlocked all the same.
	Suppressed int `json:"suppressed,omitempty"`
	// OthersReached and OthersBlocked count the hosts past the record's cap of each list.
	OthersReached *HostTotal `json:"others_reached,omitempty"`
	OthersBlocked *HostTotal `json:"others_blocked,omitempty"`
}

// HostSummary is one host's attempts (for a host reached: connections made, and their bytes).
type HostSummary struct {
	Host      string `json:"host"`
	Attempts  int    `json:"attempts"`
	BytesUp   int64  `json:"bytes_up,omitempty"`
	BytesDown int64  `json:"bytes_down,omitempty"`
}

// maxLogLine bounds one line: a real entry is a few hundred bytes.
const maxLogLine = 16 << 10

// ReadLog reads a log (the host side caps how much it reads), summarizes every entry in it,
// and returns the last maxEntries entries, oldest first. Lines that are not entries are
// counted and skipped: the file is root's, but read as hostile all the same.
func ReadLog(r io.Reader, maxEntries int) (Summary, []Entry, error) {
	t := NewTotals()
	unreadable := 0
	var last []Entry
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			if e, ok := ParseEntry(line); ok {
				t.Add(e)
				if maxEntries > 0 {
					if len(last) == maxEntries {
						last = append(last[:0], last[1:]...)
					}
					last = append(last, e)
				}
			} else {
				unreadable++
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			s := t.Summary()
			s.Unreadable = unreadable
			return s, last, err
		}
	}
	s := t.Summary()
	s.Unreadable = unreadable
	return s, last, nil
}

// readLine reads one line; a line longer than maxLogLine is returned cut (and will not parse).
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(line) <= maxLogLine {
			line = append(line, chunk...)
		}
		if err != nil || !isPrefix {
			return bytes.TrimSpace(line), err
		}
	}
}

// ParseEntry reads one log line, or says it is not an entry (its fields out of range included).
func ParseEntry(line []byte) (Entry, bool) {
	if len(line) > maxLogLine {
		return Entry{}, false
	}
	var e Entry
	if json.Unmarshal(line, &e) != nil || e.Host == "" || e.Time.IsZero() ||
		(e.Verdict != VerdictAllowed && e.Verdict != VerdictBlocked) || (e.Via != ViaProxy && e.Via != ViaDirect) ||
		e.Port < 0 || e.Port > 65535 || e.BytesUp < 0 || e.BytesDown < 0 || len(e.Command) > MaxEntryCommand {
		return Entry{}, false
	}
	return e, true
}
