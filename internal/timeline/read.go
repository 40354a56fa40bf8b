package timeline

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Timeline is a session's timeline as read.
type Timeline struct {
	// Events are the events the files still hold, oldest generation first, each file in the
	// order written.
	Events []Event
	// Counts are the totals of the whole timeline: the events held and those rotation dropped.
	Counts Counts
	// Dropped are the counts of the events rotation dropped (not in Events).
	Dropped Counts
	// Bad counts lines that did not parse (a line longer than the cap, a damaged file).
	Bad int
	// end is the size of the current file at the end of its last whole line (for Follow).
	end int64
}

// Read reads the timeline in dir. No timeline yet is an empty one, not an error.
func Read(dir string) (*Timeline, error) {
	tl := &Timeline{}
	tot, err := readTotals(dir)
	if err != nil {
		return nil, err
	}
	tl.Dropped = tot.Dropped
	tl.Counts = tot.Dropped
	last := ""
	var old Counts
	err = scanFile(filepath.Join(dir, OldName), 0, func(e *Event, line []byte) {
		tl.Events = append(tl.Events, *e)
		old.Add(e)
		last = lineID(line)
	}, &tl.Bad)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if last == "" || last != tot.LastDropped {
		tl.Counts.Merge(old)
	} // else: counted in the totals already (a rotation stopped before it removed the file)
	tl.end, err = scanFrom(filepath.Join(dir, FileName), 0, func(e *Event, _ []byte) {
		tl.Events = append(tl.Events, *e)
		tl.Counts.Add(e)
	}, &tl.Bad)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return tl, nil
}

// ByTime is events in the order they began (a stable sort: events of one time stay in the
// order written). Events are written when they end (a call when it returns, the network
// events when serve reads the guest's record), so the files hold them nearly, not exactly,
// in order.
func ByTime(events []Event) []Event {
	out := slices.Clone(events)
	slices.SortStableFunc(out, func(a, b Event) int { return a.Time.Compare(b.Time) })
	return out
}

// Exists says whether dir holds a timeline.
func Exists(dir string) bool {
	for _, n := range []string{FileName, OldName, TotalsName} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// Follower reads what is appended to a timeline after it was read, one look at a time (Read),
// when its caller chooses (`log --follow` looks every poll).
type Follower struct {
	path, oldPath string
	ino           uint64 // the current file followed (0: none yet)
	off           int64  // how far it was read
	oldDone       uint64 // the OldName file read to its end
}

// Follower follows the timeline in dir from where tl's reading ended.
func (tl *Timeline) Follower(dir string) *Follower {
	f := &Follower{path: filepath.Join(dir, FileName), oldPath: filepath.Join(dir, OldName), off: tl.end}
	if fi, err := os.Lstat(f.path); err == nil {
		f.ino = inode(fi)
	}
	if fi, err := os.Lstat(f.oldPath); err == nil {
		f.oldDone = inode(fi)
	}
	return f
}

// Read calls fn for each event appended since the last look, in the order written. A rotation
// is followed (the new file is read from its start). It returns the error reading the files.
func (f *Follower) Read(fn func(*Event)) error {
	fi, err := os.Lstat(f.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err != nil || inode(fi) != f.ino {
		// Rotated: what the file we followed got after our last read is in OldName now
		// (unless it rotated twice between two looks: 8 MiB in one poll).
		// A file made and rotated between two looks (while we waited for one) is read
		// from its start.
		if ofi, oerr := os.Lstat(f.oldPath); oerr == nil && inode(ofi) != f.oldDone {
			from := f.off
			if inode(ofi) != f.ino {
				from = 0
			}
			if f.ino != 0 || from == 0 {
				_, _ = scanFrom(f.oldPath, from, func(e *Event, _ []byte) { fn(e) }, nil)
			}
			f.oldDone = inode(ofi)
		}
		f.ino, f.off = 0, 0
		if err != nil {
			return nil // no current file yet
		}
		f.ino = inode(fi)
	}
	if fi.Size() < f.off {
		f.off = 0 // replaced in place: read it again
	}
	if fi.Size() == f.off {
		return nil
	}
	f.off, err = scanFrom(f.path, f.off, func(e *Event, _ []byte) { fn(e) }, nil)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
