package timeline

import (
	"fmt"
	"strings"
	"time"
)

// Attribution answers, for a path of the changeset, which recorded calls produced it:
//   - the file-tool calls that named it (write_file, replace: exact);
//   - the calls whose time window holds the path's change time as the guest reports it (its
//     mtime): a shell command, a background process while it ran, a restore. Several windows
//     holding it (concurrent calls, a background process) make it "one of these calls".
//
// The mtime is the guest's, and the agent can set it (touch -d): attribution is a guide for
// the person reviewing, not evidence (docs/log.md).

// Slack widens every window: the guest's clock and the host's may differ by a little, and
// mtimes are read in whole seconds by some file systems.
const Slack = 2 * time.Second

// Ref is one call in an attribution, as review --json gives it.
type Ref struct {
	Time       time.Time `json:"t"`
	Kind       Kind      `json:"kind"`
	Tool       string    `json:"tool,omitempty"`
	Command    string    `json:"command,omitempty"`
	Exit       *int      `json:"exit,omitempty"`
	Error      bool      `json:"error,omitempty"`
	DurationMS float64   `json:"duration_ms,omitempty"`
	Background int       `json:"background_id,omitempty"`
}

// Provenance is the attribution of one path.
type Provenance struct {
	// Named are the file-tool calls that named the path, in order.
	Named []Ref `json:"named,omitempty"`
	// ChangedBy are the calls whose window holds the path's change time: one is the call that
	// last changed it; several, one of them (Ambiguous).
	ChangedBy []Ref `json:"changed_by,omitempty"`
	Ambiguous bool  `json:"ambiguous,omitempty"`
	// ChangedAt is the change time used (the guest's mtime; zero when unknown, as for a
	// deletion).
	ChangedAt time.Time `json:"changed_at,omitzero"`
	// Unattributed says the change time falls in no recorded call.
	Unattributed bool `json:"unattributed,omitempty"`
}

// Change is a path of the changeset as attribution needs it.
type Change struct {
	Path string // relative to the working directory, as events name paths
	// MTime is the path's change time in the guest (zero: unknown, e.g. deleted).
	MTime   time.Time
	Deleted bool
}

// window is a call that may change files while it runs.
type window struct {
	ref        Ref
	start, end time.Time
	names      []string // the paths a file tool named
}

// maxCandidates bounds the calls one path lists.
const maxCandidates = 8

// Attribute attributes each change to the events of tl. now closes the windows of
// background processes still running (whose exit is not recorded).
func Attribute(events []Event, changes []Change, now time.Time) map[string]*Provenance {
	wins := windows(events, now)
	out := make(map[string]*Provenance, len(changes))
	for _, c := range changes {
		p := &Provenance{}
		for _, w := range wins {
			for _, n := range w.names {
				if n == c.Path {
					p.Named = append(p.Named, w.ref)
				}
			}
		}
		switch {
		case !c.MTime.IsZero():
			p.ChangedAt = c.MTime.UTC()
			for _, w := range wins {
				if !c.MTime.Before(w.start.Add(-Slack)) && !c.MTime.After(w.end.Add(Slack)) && (len(w.names) == 0 || contains(w.names, c.Path)) {
					p.ChangedBy = append(p.ChangedBy, w.ref)
				}
			}
		case c.Deleted || c.MTime.IsZero():
			// No change time: every call that could delete or change a path without naming
			// it is a candidate (the file tools name theirs).
			for _, w := range wins {
				if len(w.names) == 0 {
					p.ChangedBy = append(p.ChangedBy, w.ref)
				}
			}
		}
		p.Ambiguous = len(p.ChangedBy) > 1
		p.Unattributed = len(p.ChangedBy) == 0 && len(p.Named) == 0
		if len(p.ChangedBy) > maxCandidates {
			p.ChangedBy = p.ChangedBy[len(p.ChangedBy)-maxCandidates:] // the latest ones
		}
		out[c.Path] = p
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// fileTools are the tools that write the path they name.
var fileTools = map[string]bool{"write_file": true, "replace": true}

// windowTools are the tools that change files they do not name.
var windowTools = map[string]bool{"run_shell_command": true, "restore_checkpoint": true}

func windows(events []Event, now time.Time) []window {
	var wins []window
	bgIndex := map[[2]int]int{} // (pid, background id) → index in wins
	for i := range events {
		e := &events[i]
		ref := Ref{Time: e.Time, Kind: e.Kind, Tool: e.Tool, Command: e.Command, Exit: e.Exit, Error: e.Error != "", DurationMS: e.DurationMS, Background: e.Background}
		switch {
		case e.Kind == Call && fileTools[e.Tool] && e.Error == "":
			wins = append(wins, window{ref: ref, start: e.Time, end: e.End(), names: e.Paths})
		case e.Kind == Call && windowTools[e.Tool] && e.Background == 0:
			wins = append(wins, window{ref: ref, start: e.Time, end: e.End()})
		case e.Kind == Command || e.Kind == Restore:
			wins = append(wins, window{ref: ref, start: e.Time, end: e.End()})
		case e.Kind == BackgroundStart:
			ref.Kind = BackgroundStart
			bgIndex[[2]int{e.PID, e.Background}] = len(wins)
			wins = append(wins, window{ref: ref, start: e.Time, end: now})
		case e.Kind == BackgroundExit:
			if j, ok := bgIndex[[2]int{e.PID, e.Background}]; ok {
				wins[j].end = e.Time
				delete(bgIndex, [2]int{e.PID, e.Background})
			}
		case e.Kind == ServeEnd:
			// The server ended its background processes as it exited.
			for k, j := range bgIndex {
				if k[0] == e.PID {
					wins[j].end = e.Time
					delete(bgIndex, k)
				}
			}
		}
	}
	return wins
}

// Line says p in one line for a person: "written by write_file at 10:02:11; then modified by
// `npm install` (exit 0, 41 s) at 10:05:40".
func (p *Provenance) Line(deleted bool) string {
	if p == nil {
		return ""
	}
	var parts []string
	verb := "written"
	for i, r := range p.Named {
		if i == 3 && len(p.Named) > 4 {
			parts = append(parts, fmt.Sprintf("%d more file-tool calls", len(p.Named)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%s by %s at %s", verb, r.Tool, clock(r.Time)))
		verb = "then by"
	}
	last := time.Time{}
	if n := len(p.Named); n > 0 {
		last = p.Named[n-1].Time
	}
	// The windows that are not the file-tool calls themselves.
	var others []Ref
	for _, r := range p.ChangedBy {
		if !fileTools[r.Tool] {
			others = append(others, r)
		}
	}
	what := "modified"
	if deleted {
		what = "deleted"
	}
	switch {
	case len(others) == 1 && (len(p.Named) == 0 || others[0].Time.After(last) || deleted):
		s := what + " by " + others[0].Describe()
		if len(parts) > 0 {
			s = "then " + s
		}
		parts = append(parts, s)
	case len(others) > 1:
		var ds []string
		for _, r := range others[:min(len(others), 3)] {
			ds = append(ds, r.Describe())
		}
		s := fmt.Sprintf("%s by one of these %d calls: %s", what, len(others), strings.Join(ds, "; "))
		if len(others) > 3 {
			s += "; …"
		}
		if len(parts) > 0 {
			s = "then maybe " + s
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		if p.ChangedAt.IsZero() {
			return "no recorded call changed it"
		}
		return "changed at " + clock(p.ChangedAt) + ", outside every recorded call"
	}
	return strings.Join(parts, "; ")
}

// Describe says one call: "`npm install` (exit 0, 41 s) at 10:05:40".
func (r Ref) Describe() string {
	name := r.Tool
	if r.Command != "" {
		name = "`" + capString(r.Command, 60) + "`"
	}
	if r.Kind == BackgroundStart {
		name = fmt.Sprintf("background process %d %s", r.Background, name)
	}
	var detail []string
	if r.Exit != nil {
		detail = append(detail, fmt.Sprintf("exit %d", *r.Exit))
	}
	if r.Error {
		detail = append(detail, "failed")
	}
	if r.DurationMS > 0 && r.Kind != BackgroundStart {
		detail = append(detail, Duration(r.DurationMS))
	}
	s := name
	if len(detail) > 0 {
		s += " (" + strings.Join(detail, ", ") + ")"
	}
	if r.Kind == BackgroundStart {
		return s + " started at " + clock(r.Time)
	}
	return s + " at " + clock(r.Time)
}

// clock is a time as the person's local clock shows it.
func clock(t time.Time) string { return t.Local().Format("15:04:05") }

// Duration says milliseconds for a person: "12 ms", "1.4 s", "41 s", "3 min 2 s".
func Duration(ms float64) string {
	switch {
	case ms < 1:
		return "<1 ms"
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	case ms < 10_000:
		return fmt.Sprintf("%.1f s", ms/1000)
	case ms < 60_000:
		return fmt.Sprintf("%.0f s", ms/1000)
	}
	d := time.Duration(ms) * time.Millisecond
	m := int(d / time.Minute)
	if m >= 60 {
		return fmt.Sprintf("%d h %d min", m/60, m%60)
	}
	return fmt.Sprintf("%d min %d s", m, int((d%time.Minute)/time.Second))
}
