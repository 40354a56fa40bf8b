package review

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Report says what an apply did.
type Report struct {
	JournalID string   `json:"journal_id,omitempty"`
	Written   []string `json:"written"`           // host paths written, created or removed
	Guest     []string `json:"guest,omitempty"`   // guest paths reverted or set to the host's version
	Pending   []string `json:"pending,omitempty"` // left pending in the guest (rejected, skipped)
	Refused   []string `json:"refused,omitempty"` // "path: reason"
	DryRun    bool     `json:"dry_run,omitempty"`
	// Checkpoint is the automatic checkpoint of the guest copy taken before the apply, or
	// CheckpointError why there is none (the apply went ahead).
	Checkpoint      string `json:"checkpoint,omitempty"`
	CheckpointError string `json:"checkpoint_error,omitempty"`
}

// Apply carries out decisions, in an order that keeps every host edit: the tree the steps
// would leave is checked first (guardFinalState); then every new file's content is fetched
// from the guest into the journal (the long part); then, per path, the host is checked against
// what was reviewed and backed up; then each write is made atomically, after checking the host
// once more immediately before its rename. The baseline moves only for what was written; a
// refused or failed step leaves its path pending.
func Apply(ctx context.Context, sess *staging.Session, cs *Changeset, decisions []Decision) (*Report, error) {
	steps, pending, err := plan(cs, decisions)
	if err != nil {
		return nil, err
	}
	unlock, err := sess.Store().Lock(sess.State.ID, time.Minute)
	if err != nil {
		return nil, err
	}
	defer unlock()
	host, err := openHost(sess.State.Workdir)
	if err != nil {
		return nil, err
	}
	defer host.close()
	rep := &Report{Written: []string{}, Pending: pending}
	if err := recoverInterrupted(sess, host, rep); err != nil {
		return nil, err
	}
	if len(steps) > 0 {
		// The guest copy as the person reviewed it, before the apply moves the baseline (and
		// "reject and revert" changes the copy).
		if id, err := sess.AutoCheckpoint(ctx, "review apply"); err != nil {
			rep.CheckpointError = err.Error()
		} else {
			rep.Checkpoint = id
		}
	}
	refused := map[*step]string{}
	if err := guardFinalState(host, steps, refused); err != nil {
		return nil, err
	}

	j, err := newJournal(sess.Store().BackupDir(sess.State.ID))
	if err != nil {
		return nil, err
	}
	rep.JournalID = j.ID
	// The content first, while the host is not yet looked at.
	blobs := map[*step]string{}
	for i, s := range steps {
		if refused[s] != "" || !s.hostOp || s.after == nil || s.after.Type != tree.File {
			continue
		}
		blobs[s] = fmt.Sprintf("%d.after", i)
		if err := s.fetch(ctx, sess, j.blobPath(blobs[s])); err != nil {
			refused[s] = err.Error()
		}
	}
	// The host as reviewed, and its backup.
	entries := map[*step]*journalEntry{}
	for i, s := range steps {
		if refused[s] != "" || (!s.hostOp && !s.moveBase) {
			continue
		}
		now, err := host.entry(s.it.Path)
		if err != nil {
			refused[s] = err.Error()
			continue
		}
		want := s.it.Host
		if s.fresh {
			// The new name of a rename: where the host tells the names apart it has nothing
			// there; where it does not, the lookup finds the old name's entry.
			want = nil
			if now != nil && !s.it.Moved {
				want = s.pair.it.Host
			}
		}
		if !sameOrAbsent(now, want) {
			refused[s] = errChangedOnHost.Error()
			continue
		}
		je := &journalEntry{Path: s.it.Path, Before: now, After: s.after, AfterBlob: blobs[s], BaseBefore: s.it.Base, BaseAfter: s.baseNext, HostOp: s.hostOp}
		if s.pair != nil {
			je.Pair = s.pair.it.Path
		}
		if s.fresh {
			je.Before = nil // written after the old name is removed, where nothing is left
		}
		if s.hostOp && je.Before != nil && now.Type == tree.File {
			je.BeforeBlob = fmt.Sprintf("%d.before", i)
			if err := host.backup(s.it.Path, now, j.blobPath(je.BeforeBlob)); err != nil {
				refused[s] = "cannot back it up: " + err.Error()
				continue
			}
		}
		entries[s] = je
	}
	refuseReplacedTrees(host, steps, refused)
	refuseUnits(steps, refused)
	for _, s := range steps {
		if refused[s] == "" && entries[s] != nil {
			j.Entries = append(j.Entries, *entries[s])
		}
	}
	// Removals first, deepest first (a directory that becomes something else is emptied before
	// it is replaced); then creations and writes, parents first.
	sort.SliceStable(j.Entries, func(a, b int) bool {
		ra, rb := j.Entries[a].After == nil, j.Entries[b].After == nil
		if ra != rb {
			return ra
		}
		if ra {
			return j.Entries[a].Path > j.Entries[b].Path
		}
		return j.Entries[a].Path < j.Entries[b].Path
	})
	if err := j.save(statePrepared); err != nil {
		return nil, err
	}
	// Host writes: each atomic; the journal lets a crash here be rolled back.
	failed := map[string]string{} // unit root path → why
	for k := range j.Entries {
		je := &j.Entries[k]
		if !je.HostOp {
			continue
		}
		if root, why := failedUnit(failed, je); root != "" {
			je.NotWritten = true
			rep.Refused = append(rep.Refused, je.Path+": not applied: it goes with "+root+", which failed ("+why+")")
			continue
		}
		if err := setHost(host, je.Path, je.After, j, je.AfterBlob, false, host.expect(je.Path, je.Before)); err != nil {
			je.NotWritten = true
			rep.Refused = append(rep.Refused, je.Path+": "+err.Error())
			failed[je.Path] = err.Error()
			if je.Pair != "" {
				rep.Written = unwriteRenamed(host, j, je.Pair, rep)
			}
			continue
		}
		rep.Written = append(rep.Written, shownPath(je.Path))
	}
	if err := host.syncDirs(); err != nil {
		return nil, err
	}
	moved := 0
	for _, je := range j.Entries {
		if !je.NotWritten {
			moved++
		}
	}
	if moved == 0 {
		// Nothing was written and the baseline does not move: no undo step, so that
		// `review --undo` still undoes the last apply that did something.
		if err := os.Remove(filepath.Join(j.dir, "journal.json")); err != nil {
			return nil, err
		}
		if err := os.RemoveAll(j.dir); err != nil {
			return nil, err
		}
		rep.JournalID = ""
	} else if err := j.save(stateCommitted); err != nil {
		return nil, err
	}
	// What was written becomes the new baseline; the rest stays pending.
	set := map[tree.Name]*tree.Entry{}
	for _, je := range j.Entries {
		if !je.NotWritten {
			set[tree.Name(je.Path)] = je.BaseAfter
		}
	}
	if err := sess.SaveBaseline(sess.Baseline.Update(set)); err != nil {
		return nil, err
	}
	for _, s := range steps {
		if why := refused[s]; why != "" {
			rep.Refused = append(rep.Refused, s.it.Display+": "+why)
		}
	}
	// Guest-side steps.
	done := map[string]bool{}
	for _, je := range j.Entries {
		done[je.Path] = !je.NotWritten
	}
	for _, s := range steps {
		if s.guestOp == "" || refused[s] != "" || (s.moveBase && !done[s.it.Path]) {
			continue
		}
		var err error
		switch s.guestOp {
		case "revert":
			err = setGuest(ctx, sess, host, s.it.Path, s.it.Base, s.it)
		case "keep-host":
			err = keepHostInGuest(ctx, sess, host, s.it)
		}
		if err != nil {
			rep.Refused = append(rep.Refused, s.it.Display+": in the guest: "+err.Error())
			continue
		}
		rep.Guest = append(rep.Guest, s.it.Display)
	}
	return rep, nil
}

// unwriteRenamed puts back the old name of a rename whose new name could not be written (its
// removal came first): a rename is both halves or neither. It returns rep.Written without it.
func unwriteRenamed(host *hostTree, j *journal, old string, rep *Report) []string {
	for k := range j.Entries {
		je := &j.Entries[k]
		if je.Path != old || !je.HostOp || je.NotWritten {
			continue
		}
		if err := setHost(host, je.Path, je.Before, j, je.BeforeBlob, true, host.expect(je.Path, je.After)); err != nil {
			rep.Refused = append(rep.Refused, je.Path+": putting it back after the rename failed: "+err.Error()+" (`review --undo` restores it)")
			return rep.Written
		}
		je.NotWritten = true
		var out []string
		for _, w := range rep.Written {
			if w != shownPath(je.Path) {
				out = append(out, w)
			}
		}
		return out
	}
	return rep.Written
}

// refuseReplacedTrees refuses removing or replacing a host directory that holds anything the
// same apply does not remove: the person's own files in it are kept, and so is the change.
func refuseReplacedTrees(host *hostTree, steps []*step, refused map[*step]string) {
	removed := map[string]bool{}
	for _, s := range steps {
		if s.hostOp && s.after == nil && refused[s] == "" {
			removed[s.it.Path] = true
		}
	}
	for _, s := range steps {
		h := s.it.Host
		if refused[s] != "" || !s.hostOp || h == nil || h.Type != tree.Dir || (s.after != nil && s.after.Type == tree.Dir) {
			continue
		}
		below, err := host.tree(s.it.Path)
		if err != nil {
			refused[s] = err.Error()
			continue
		}
		for _, p := range below {
			if !removed[p] {
				refused[s] = fmt.Sprintf("the host's directory holds %s, which the guest does not know: the directory and everything in it are kept", p)
				break
			}
		}
	}
}

// failedUnit says whether je goes with a path whose write failed: a unit root above it (a
// directory being created or replaced), or, when je is itself a unit root, a path below it.
func failedUnit(failed map[string]string, je *journalEntry) (string, string) {
	if why, ok := failed[je.Pair]; ok && je.Pair != "" {
		return je.Pair, why
	}
	for f, why := range failed {
		if tree.Below(f, je.Path) || tree.Below(je.Path, f) && entryUnitRoot(je) {
			return f, why
		}
	}
	return "", ""
}

// entryUnitRoot is unitRoot for a journal entry.
func entryUnitRoot(je *journalEntry) bool {
	wasDir := je.Before != nil && je.Before.Type == tree.Dir
	isDir := je.After != nil && je.After.Type == tree.Dir
	return je.HostOp && wasDir != isDir
}

// fetch writes the step's new file content to dst: from memory, or streamed from the guest
// and checked against the hash that was reviewed.
func (s *step) fetch(ctx context.Context, sess *staging.Session, dst string) error {
	if s.content != nil {
		return os.WriteFile(dst, s.content, 0o600)
	}
	if s.it.src != nil {
		sess = s.it.src // a version a compare took from another session
	}
	f, err := sess.OpenGuestFile(ctx, tree.Name(s.it.Path))
	if err != nil {
		return fmt.Errorf("reading it from the guest: %w", err)
	}
	defer f.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	h := tree.NewHasher()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(f, s.it.Guest.Size+1))
	if err != nil {
		return fmt.Errorf("reading it from the guest: %w", err)
	}
	if n != s.it.Guest.Size || h.Sum() != s.it.Guest.Hash {
		return errors.New("changed in the guest since the review began; nothing written (review again)")
	}
	return out.Sync()
}

// setHost makes the host's rel match e (nil: absent), with a file's content from the
// journal's blob; ok runs immediately before the host changes. allowOutsideLinks is for
// restoring the host's own symlinks.
func setHost(host *hostTree, rel string, e *tree.Entry, j *journal, blob string, allowOutsideLinks bool, ok check) error {
	if e == nil {
		return host.remove(rel, ok)
	}
	switch e.Type {
	case tree.File:
		f, err := os.Open(j.blobPath(blob))
		if err != nil {
			return err
		}
		defer f.Close()
		return host.writeFile(rel, f, e.Mode, ok)
	case tree.Symlink:
		return host.symlink(rel, string(e.Target), allowOutsideLinks, ok)
	case tree.Dir:
		return host.mkdir(rel, e.Mode, ok)
	}
	return fmt.Errorf("refusing to create a %s", e.Type)
}

// setGuest makes the guest copy's rel match e (nil: absent), taking a file's content from
// the host (the baseline's content is the host's while the host has not changed it).
func setGuest(ctx context.Context, sess *staging.Session, host *hostTree, rel string, e *tree.Entry, it *Item) error {
	var data []byte
	if e != nil && e.Type == tree.File {
		var err error
		if data, err = host.readFile(rel); err != nil {
			return err
		}
		if tree.Hash(data) != e.Hash {
			return errors.New("the host's copy changed, so the staged version is no longer known; left as it is")
		}
	}
	return sess.SetGuestEntry(ctx, tree.Name(rel), e, data)
}

// keepHostInGuest settles a conflict for the host's version. The host's content goes into the
// guest only for a path that was staged (in the baseline): a host file that was never staged
// may be a secret the staging rules kept out (a global gitignore, a nested repository's
// rules), so the guest's version is removed instead, and the path is no longer pending.
func keepHostInGuest(ctx context.Context, sess *staging.Session, host *hostTree, it *Item) error {
	if neverStaged(it) {
		return setGuest(ctx, sess, host, it.Path, nil, it)
	}
	return setGuest(ctx, sess, host, it.Path, it.Host, it)
}
