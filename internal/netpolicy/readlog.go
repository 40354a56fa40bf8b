package netpolicy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"sort"
)

// Summary is what a log says, for status and review: "the agent reached 2 hosts, 3 attempts
// blocked".
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
}

// HostSummary is one host's attempts.
type HostSummary struct {
	Host     string `json:"host"`
	Attempts int    `json:"attempts"`
}

// maxLogLine bounds one line: a real entry is a few hundred bytes.
const maxLogLine = 16 << 10

// ReadLog reads a log (the host side caps how much it reads), summarizes every entry in it,
// and returns the last maxEntries entries, oldest first. Lines that are not entries are
// counted and skipped: the file is root's, but read as hostile all the same.
func ReadLog(r io.Reader, maxEntries int) (Summary, []Entry, error) {
	var s Summary
	reached, blocked := map[string]int{}, map[string]int{}
	var last []Entry
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			if e, ok := parseEntry(line); ok {
				s.add(e, reached, blocked)
				if maxEntries > 0 {
					if len(last) == maxEntries {
						last = append(last[:0], last[1:]...)
					}
					last = append(last, e)
				}
			} else {
				s.Unreadable++
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return s, last, err
		}
	}
	s.HostsReached = hostList(reached)
	s.HostsBlocked = hostList(blocked)
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

func parseEntry(line []byte) (Entry, bool) {
	if len(line) > maxLogLine {
		return Entry{}, false
	}
	var e Entry
	if json.Unmarshal(line, &e) != nil || e.Host == "" || e.Time.IsZero() ||
		(e.Verdict != VerdictAllowed && e.Verdict != VerdictBlocked) || (e.Via != ViaProxy && e.Via != ViaDirect) ||
		e.Port < 0 || e.Port > 65535 || e.BytesUp < 0 || e.BytesDown < 0 {
		return Entry{}, false
	}
	return e, true
}

func (s *Summary) add(e Entry, reached, blocked map[string]int) {
	s.Attempts++
	if e.Verdict == VerdictAllowed {
		s.Allowed++
		if e.Reason == "" { // allowed, and the connection was made
			reached[e.Host]++
		}
		s.BytesUp += e.BytesUp
		s.BytesDown += e.BytesDown
		return
	}
	s.Blocked++
	blocked[e.Host]++
	last := e
	s.LastBlocked = &last
}

func hostList(counts map[string]int) []HostSummary {
	list := make([]HostSummary, 0, len(counts))
	for h, n := range counts {
		list = append(list, HostSummary{Host: h, Attempts: n})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].Attempts != list[j].Attempts {
			return list[i].Attempts > list[j].Attempts
		}
		return list[i].Host < list[j].Host
	})
	if len(list) == 0 {
		return nil
	}
	return list
}
