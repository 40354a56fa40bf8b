package review

import (
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
)

// Attribute sets each item's Provenance from the session's timeline (internal/timeline):
// the file-tool calls that named its path, and the calls whose window holds its change time
// in the guest. now closes the windows of background processes still running. It returns
// the timeline read (nil and the error when it cannot be read: the items keep no provenance;
// none either when it has no event).
func Attribute(sess *staging.Session, cs *Changeset, now time.Time) (*timeline.Timeline, error) {
	tl, err := timeline.Read(sess.Store().SessionDir(sess.State.ID))
	if err != nil {
		return nil, err
	}
	if tl.Counts.Events == 0 {
		return tl, nil // no timeline (a session from before it, a live mount): nothing to say
	}
	changes := make([]timeline.Change, 0, len(cs.Items))
	for _, it := range cs.Items {
		c := timeline.Change{Path: it.Path, Deleted: it.Guest == nil}
		if it.Guest != nil && it.Guest.MTime != 0 {
			c.MTime = time.Unix(0, it.Guest.MTime)
		}
		changes = append(changes, c)
	}
	prov := timeline.Attribute(tl.Events, changes, now)
	for _, it := range cs.Items {
		it.Provenance = prov[it.Path]
	}
	return tl, nil
}

// History says in one line which calls produced the item ("" without a timeline).
func (it *Item) History() string {
	if it.Provenance == nil {
		return ""
	}
	return it.Provenance.Line(it.Kind == staging.Deleted)
}
