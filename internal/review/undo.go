package review

import (
	"context"
	"errors"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// recoverInterrupted rolls back an apply that was killed before it finished: every path it
// had already written goes back to its backup; paths changed since are left alone and reported.
func recoverInterrupted(sess *staging.Session, host *hostTree, rep *Report) error {
	js, err := journals(sess.Store().BackupDir(sess.State.ID))
	if err != nil {
		return err
	}
	for _, j := range js {
		if j.State != statePrepared {
			continue
		}
		kept := map[string]bool{}                  // paths that could not be rolled back
		for k := len(j.Entries) - 1; k >= 0; k-- { // the reverse of the apply's order
			je := j.Entries[k]
			if !je.HostOp {
				continue
			}
			host.removeTemps(je.Path)
			if je.Pair != "" && kept[je.Pair] {
				rep.Refused = append(rep.Refused, je.Path+": interrupted apply: not rolled back: it goes with "+je.Pair+", which is left as it is")
				kept[je.Path] = true
				continue
			}
			if je.Pair != "" && je.Before == nil && je.After != nil && !host.hasName(je.Path) {
				continue // a rename's new name, not written yet (a lookup may find the old one)
			}
			now, err := host.entry(je.Path)
			if err != nil {
				rep.Refused = append(rep.Refused, je.Path+": interrupted apply: "+err.Error())
				kept[je.Path] = true
				continue
			}
			if sameOrAbsent(now, je.After) && !sameOrAbsent(now, je.Before) {
				if err := setHost(host, je.Path, je.Before, j, je.BeforeBlob, true, host.expect(je.Path, je.After)); err != nil {
					rep.Refused = append(rep.Refused, je.Path+": rolling back an interrupted apply: "+err.Error())
					kept[je.Path] = true
				}
			} else if !sameOrAbsent(now, je.Before) {
				kept[je.Path] = true // changed since: left as it is
			}
		}
		if err := host.syncDirs(); err != nil {
			return err
		}
		if err := j.save(stateRolledBack); err != nil {
			return err
		}
	}
	return nil
}

func sameOrAbsent(a, b *tree.Entry) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if a.Type == tree.Dir && b.Type == tree.Dir {
		return true
	}
	x, y := *a, *b
	x.Mode &= 0o777
	y.Mode &= 0o777
	return sameEntry(&x, &y)
}

// RecoverInterrupted rolls back an interrupted apply, if there is one, and says what it did.
func RecoverInterrupted(sess *staging.Session) (*Report, bool, error) {
	js, err := journals(sess.Store().BackupDir(sess.State.ID))
	if err != nil {
		return nil, false, err
	}
	found := false
	for _, j := range js {
		found = found || j.State == statePrepared
	}
	if !found {
		return nil, false, nil
	}
	unlock, err := sess.Store().Lock(sess.State.ID, time.Minute)
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	host, err := openHost(sess.State.Workdir)
	if err != nil {
		return nil, false, err
	}
	defer host.close()
	rep := &Report{}
	return rep, true, recoverInterrupted(sess, host, rep)
}

// Undo restores what the last apply overwrote or deleted. A path the person changed after
// that apply is refused, with a message, and left as it is.
func Undo(ctx context.Context, sess *staging.Session) (*Report, error) {
	if rep, rolled, err := RecoverInterrupted(sess); err != nil || rolled {
		if rep != nil {
			rep.JournalID = "interrupted apply rolled back"
		}
		return rep, err
	}
	unlock, err := sess.Store().Lock(sess.State.ID, time.Minute)
	if err != nil {
		return nil, err
	}
	defer unlock()
	js, err := journals(sess.Store().BackupDir(sess.State.ID))
	if err != nil {
		return nil, err
	}
	var j *journal
	for _, c := range js {
		if c.State == stateCommitted {
			j = c
			break
		}
	}
	if j == nil {
		return nil, errors.New("there is no apply to undo: no review of this session has written to the host since it was staged, or the last one was undone already (reverts in the guest cannot be undone)")
	}
	host, err := openHost(sess.State.Workdir)
	if err != nil {
		return nil, err
	}
	defer host.close()
	rep := &Report{JournalID: j.ID, Written: []string{}}
	set := map[tree.Name]*tree.Entry{}
	kept := map[string]bool{}                  // paths left as they are
	for k := len(j.Entries) - 1; k >= 0; k-- { // the reverse of the apply's order
		je := j.Entries[k]
		if je.NotWritten {
			continue
		}
		if je.HostOp {
			refuse := func(why string) {
				rep.Refused = append(rep.Refused, je.Path+": "+why)
				kept[je.Path] = true
			}
			if je.Pair != "" && kept[je.Pair] {
				// A rename: its new name (undone first) stays, so the old one is not put back
				// next to it.
				refuse("not restored: it goes with " + je.Pair + ", which is left as it is")
				continue
			}
			if je.Pair != "" && je.Before == nil && je.After != nil && !host.hasName(je.Path) {
				refuse("renamed or removed on the host after the apply; left as it is")
				continue
			}
			now, err := host.entry(je.Path)
			if err != nil {
				refuse(err.Error())
				continue
			}
			if !sameOrAbsent(now, je.After) {
				refuse("changed on the host after the apply; left as it is")
				continue
			}
			if err := setHost(host, je.Path, je.Before, j, je.BeforeBlob, true, host.expect(je.Path, je.After)); err != nil {
				refuse(err.Error())
				continue
			}
			rep.Written = append(rep.Written, shownPath(je.Path))
		}
		set[tree.Name(je.Path)] = je.BaseBefore
	}
	if err := host.syncDirs(); err != nil {
		return nil, err
	}
	if err := sess.SaveBaseline(sess.Baseline.Update(set)); err != nil {
		return nil, err
	}
	return rep, j.save(stateUndone)
}
