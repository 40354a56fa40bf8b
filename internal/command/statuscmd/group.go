package statuscmd

import (
	"fmt"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// grouped orders sessions so that each session's forks follow it (in name order), and returns
// for each the line that says what it was forked from ("" for a session staged from the
// host). A fork whose origin is gone (discarded) stays where the listing had it.
func grouped(sts []staging.SessionStatus) ([]staging.SessionStatus, []string) {
	present := map[string]bool{}
	forksOf := map[string][]int{}
	for i, s := range sts {
		present[s.ID] = true
		if s.Fork != nil {
			forksOf[s.Fork.ID] = append(forksOf[s.Fork.ID], i)
		}
	}
	out := make([]staging.SessionStatus, 0, len(sts))
	notes := make([]string, 0, len(sts))
	var add func(i int, depth int)
	added := make([]bool, len(sts))
	add = func(i, depth int) {
		if added[i] {
			return
		}
		added[i] = true
		out = append(out, sts[i])
		notes = append(notes, forkNote(sts[i], present))
		if depth < 8 { // forks of forks, a few levels deep; a cycle cannot be made, but is bounded anyway
			for _, j := range forksOf[sts[i].ID] {
				add(j, depth+1)
			}
		}
	}
	for i, s := range sts {
		if s.Fork == nil || !present[s.Fork.ID] {
			add(i, 0)
		}
	}
	for i := range sts {
		add(i, 0)
	}
	return out, notes
}

// forkNote says what a fork was forked from, and when.
func forkNote(s staging.SessionStatus, present map[string]bool) string {
	if s.Fork == nil {
		return ""
	}
	from := "session " + staging.SessionLabel(s.Fork.Session)
	if s.Fork.Checkpoint != "" {
		from += " at checkpoint " + s.Fork.Checkpoint
	}
	if !present[s.Fork.ID] {
		from += " (discarded since)"
	}
	return fmt.Sprintf("%s, %s", from, s.Fork.At.Local().Format("2006-01-02 15:04"))
}
