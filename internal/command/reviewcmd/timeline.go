package reviewcmd

import (
	"fmt"
	"path/filepath"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// recordApply records an apply or an undo in the session's timeline: what it wrote on the
// host (relative to the working directory), set in the guest, or why it failed.
func recordApply(sess *staging.Session, kind timeline.Kind, rep *review.Report, err error) {
	e := timeline.Event{Kind: kind}
	if rep != nil {
		for _, w := range rep.Written {
			if rel, ok := tree.Inside(filepath.ToSlash(sess.State.Workdir), filepath.ToSlash(w)); ok {
				w = rel
			}
			e.Paths = append(e.Paths, w)
		}
		e.Count = len(rep.Written)
		e.Checkpoint = rep.Checkpoint
		if n := len(rep.Guest); n > 0 {
			e.Note = words.Count(n, "path") + " set in the guest"
		}
	}
	if err != nil {
		e.Error = err.Error()
	}
	timeline.OpenHost(sess.Store().SessionDir(sess.State.ID), "review").Record(e)
}

// timelineNotice is the line the interactive review shows about the session's timeline: its
// counts, and the command that shows it ("" without one).
func timelineNotice(tl *timeline.Timeline, name string) string {
	if tl == nil || tl.Counts.Events == 0 {
		return ""
	}
	c := tl.Counts
	return fmt.Sprintf("The agent made %s (%s, %d failed); `limactl mcp log %s` shows each, and each file says which calls produced it.",
		words.Count(c.Calls, "tool call"), words.Count(c.Commands, "shell command"), c.Failures, name)
}
