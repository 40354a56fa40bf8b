package secrets

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// DefaultMaxUses is how many uses a Log keeps one by one; it counts them all.
const DefaultMaxUses = 1000

// Log is a session's log of uses: every Use counted by secret and host, the last ones kept.
// It is a Recorder; safe for concurrent use.
type Log struct {
	// Max is how many uses it keeps (default DefaultMaxUses); older ones are only counted.
	Max int

	mu      sync.Mutex
	uses    []Use
	dropped int
	counts  map[string]map[string]int // secret -> host -> uses
	bare    int                       // requests to a bound host that carried no secret
	ruled   map[string]*ruledCount    // rule target -> requests checked against the rules
}

// ruledCount counts the requests to a rule target: allowed (once: by the person watching, of
// them), and refused with the last one.
type ruledCount struct {
	allowed, once, refused int
	last                   string // "METHOD PATH" of the last refused
}

// Record keeps u.
func (l *Log) Record(u Use) {
	l.mu.Lock()
	defer l.mu.Unlock()
	max := l.Max
	if max <= 0 {
		max = DefaultMaxUses
	}
	if len(l.uses) >= max {
		n := len(l.uses) - max + 1
		l.uses = slices.Delete(l.uses, 0, n)
		l.dropped += n
	}
	l.uses = append(l.uses, u)
	if u.Rules {
		if l.ruled == nil {
			l.ruled = map[string]*ruledCount{}
		}
		rc := l.ruled[u.Host]
		if rc == nil {
			rc = &ruledCount{}
			l.ruled[u.Host] = rc
		}
		if u.Refused {
			rc.refused++
			rc.last = u.Method + " " + u.Path
		} else {
			rc.allowed++
			if u.Once {
				rc.once++
			}
		}
		return
	}
	if len(u.Secrets) == 0 {
		l.bare++
	}
	for _, name := range u.Secrets {
		if l.counts == nil {
			l.counts = map[string]map[string]int{}
		}
		if l.counts[name] == nil {
			l.counts[name] = map[string]int{}
		}
		l.counts[name][u.Host]++
	}
}

// Uses are the uses kept, oldest first, and how many older ones were dropped.
func (l *Log) Uses() ([]Use, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.uses), l.dropped
}

// Count is how many requests carried the secret name to host.
func (l *Log) Count(name, host string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[name][host]
}

// Summary is one line per secret used, for status and review: "ANTHROPIC_API_KEY used 212
// times, only with api.anthropic.com".
func (l *Log) Summary() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lines []string
	names := make([]string, 0, len(l.counts))
	for n := range l.counts {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		total := 0
		var hosts []string
		for h, c := range l.counts[n] {
			total += c
			hosts = append(hosts, strings.TrimSuffix(h, ":443"))
		}
		slices.Sort(hosts)
		times := "times"
		if total == 1 {
			times = "time"
		}
		with := "only with " + hosts[0]
		if len(hosts) > 1 {
			with = "with " + strings.Join(hosts, ", ")
		}
		lines = append(lines, fmt.Sprintf("%s used %d %s, %s", n, total, times, with))
	}
	return lines
}

// RequestsSummary is one line per host whose HTTPS requests the network rules ruled on, for
// status and review: "github.com: 3 HTTPS requests allowed by the network rules, 1 refused
// (the last: POST /o/r.git/git-receive-pack)".
func (l *Log) RequestsSummary() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lines []string
	targets := make([]string, 0, len(l.ruled))
	for t := range l.ruled {
		targets = append(targets, t)
	}
	slices.Sort(targets)
	for _, t := range targets {
		rc := l.ruled[t]
		line := fmt.Sprintf("%s: %d HTTPS requests allowed by the network rules", strings.TrimSuffix(t, ":443"), rc.allowed)
		if rc.once > 0 {
			line += fmt.Sprintf(" (%d of them once, by the person watching)", rc.once)
		}
		line += fmt.Sprintf(", %d refused", rc.refused)
		if rc.refused > 0 {
			line += " (the last: " + rc.last + ")"
		}
		lines = append(lines, line)
	}
	return lines
}
