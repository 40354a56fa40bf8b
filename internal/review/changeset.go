package review

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
)

// MaxTextBytes bounds a file shown and chosen hunk by hunk; larger files are whole-file items.
const MaxTextBytes = staging.MaxDiffBytes

// Build reads the agent's changes (guest now against the baseline) and the host's current
// state of the same paths, and describes each as an Item. Paths not in paths (when given) are
// left out. Nothing is written.
func Build(ctx context.Context, sess *staging.Session, paths []string) (*Changeset, error) {
	gcs, err := sess.GuestChangesAll(ctx)
	if err != nil {
		return nil, err
	}
	host, err := openHost(sess.State.Workdir)
	if err != nil {
		return nil, err
	}
	defer host.close()
	cs := &Changeset{Workdir: sess.State.Workdir, Rule: ProbeNameRule(sess.State.Workdir)}
	fold := &foldIndex{host: host, rule: cs.Rule, listed: map[string]map[string][]string{}}
	// On a host that takes several names for one, a review of some paths takes every name
	// that is one with them: one cannot be decided without the others.
	selKeys := map[string]bool{}
	if len(paths) > 0 && cs.Rule.folds() {
		for _, c := range gcs.Changes {
			if tree.WithinAny(paths, string(c.Path)) {
				selKeys[cs.Rule.key(string(c.Path))] = true
			}
		}
	}

	// Every guest file that changed gets its hash, so that what is applied can be checked
	// against what was reviewed. The ones the review shows are read first, in a few requests
	// (readGuestTexts), and hashed here from the bytes read: the hash is of the content the
	// person sees, and the guest's emulated CPU does not hash them a second time (a quarter of
	// a second for 500 files). The others (not selected, too large to show, past the bound of
	// what is read ahead) are hashed by the runner, in one request.
	var changed []tree.Entry
	for _, c := range gcs.Changes {
		if c.Now != nil && c.Now.Type == tree.File && c.Now.Hash == "" && refusePath(string(c.Path)) == "" {
			e := *c.Now
			e.Path = c.Path
			changed = append(changed, e)
		}
	}
	var shown []tree.Entry
	for _, e := range changed {
		rel := string(e.Path)
		if len(paths) == 0 || tree.WithinAny(paths, rel) || selKeys[cs.Rule.key(rel)] {
			shown = append(shown, e)
		}
	}
	pre := readGuestTexts(ctx, sess, shown)
	hashOf := map[tree.Name]string{}
	var toHash []tree.Name
	for _, e := range changed {
		if data, ok := pre[string(e.Path)]; ok {
			hashOf[e.Path] = tree.Hash(data)
		} else {
			toHash = append(toHash, e.Path)
		}
	}
	if len(toHash) > 0 {
		hashes, err := sess.HashGuestFiles(ctx, toHash)
		if err != nil {
			return nil, err
		}
		for i, p := range toHash {
			hashOf[p] = hashes[i]
		}
	}
	hostNames := map[*Item]string{} // the host's own spelling of an item's path, when the host has it

	for _, p := range gcs.GitMetadata {
		cs.Ignored = append(cs.Ignored, &Item{Path: string(p), Display: shownPath(string(p)), Kind: staging.Modified,
			Refused: ".git is never written by a review: the guest's git config and hooks could run code on the host"})
	}
	for _, c := range gcs.Changes {
		rel := string(c.Path)
		if len(paths) > 0 && !tree.WithinAny(paths, rel) && !selKeys[cs.Rule.key(rel)] {
			continue
		}
		it := &Item{Path: rel, Display: shownPath(rel), Kind: c.Kind, Base: c.Base, Guest: c.Now}
		if why := refusePath(rel); why != "" {
			it.Refused = why
			if ignoredReason(why) {
				cs.Ignored = append(cs.Ignored, it)
			} else {
				cs.Items = append(cs.Items, it)
			}
			continue
		}
		if it.Guest != nil && it.Guest.Type == tree.File && it.Guest.Hash == "" {
			g := *it.Guest
			g.Hash = hashOf[c.Path]
			it.Guest = &g
		}
		// The host's entry for the path: under a rule that folds names, the one the host has
		// under another spelling, if any.
		hostName := rel
		if cs.Rule.folds() {
			name, exists, err := fold.hostName(rel)
			switch {
			case err != nil:
				it.Refused = err.Error()
			case path.Dir(name) != path.Dir(rel):
				it.Refused = fmt.Sprintf("its directory is %s on the host, which this host directory does not tell apart from %s (case or Unicode normalization): never applied into it. Use the host's name in the guest, or rename the directory on the host by hand, then review again", path.Dir(name), path.Dir(rel))
			case exists:
				hostName = name
			}
			if it.Refused != "" {
				cs.Items = append(cs.Items, it)
				continue
			}
			if exists {
				hostNames[it] = hostName
			}
		}
		it.Host, err = host.entry(hostName)
		if err != nil {
			it.Refused = err.Error()
			cs.Items = append(cs.Items, it)
			continue
		}
		if hostName == rel && sameEntry(it.Guest, it.Host) && it.Guest != nil && it.Guest.Type != tree.Dir {
			continue // the host already has exactly this
		}
		cs.Items = append(cs.Items, it)
	}
	resolveFolds(host, cs, gcs.Changes, sess.Baseline, hostNames)
	pairRenames(cs)
	if err := describeItems(ctx, sess, host, cs.Items, pre); err != nil {
		return nil, err
	}
	if err := pairSimilarRenames(ctx, sess, host, cs); err != nil {
		return nil, err
	}
	sort.Slice(cs.Items, func(i, j int) bool { return cs.Items[i].Path < cs.Items[j].Path })
	if err := refuseUnsafeFinalState(host, cs); err != nil {
		return nil, err
	}
	return cs, nil
}

// refuseUnsafeFinalState marks the items that accepting everything would have to refuse
// (guardFinalState, a replaced directory that holds the host's own files), so that the person
// sees why before choosing. Apply checks its own plan again.
func refuseUnsafeFinalState(host *hostTree, cs *Changeset) error {
	// Items refused already take part too, as refused steps: a refused unit root (a directory
	// replaced by a link to /etc, say) refuses everything below it.
	var ds []Decision
	already := map[*Item]string{}
	for _, it := range cs.Items {
		if it.Refused != "" {
			already[it], it.Refused = it.Refused, ""
		}
		a := Accept
		if it.Conflict {
			a = TakeGuest
		}
		if len(it.Collides) > 0 {
			a = Skip // at most one of a collision is accepted: Apply checks the one chosen
		}
		ds = append(ds, Decision{Path: it.Path, Action: a})
	}
	// Refused items may be one name with others under the host's rule: no check of names.
	steps, _, err := planSteps(cs, ds)
	for it, why := range already {
		it.Refused = why
	}
	if err != nil {
		return err
	}
	refused := map[*step]string{}
	for _, s := range steps {
		if why := already[s.it]; why != "" {
			refused[s] = why
		}
	}
	refuseReplacedTrees(host, steps, refused)
	if err := guardFinalState(host, steps, refused); err != nil {
		return err
	}
	for s, why := range refused {
		s.it.Refused = why
	}
	return nil
}

// sameEntry says whether two entries have the same type, content, mode and target.
func sameEntry(a, b *tree.Entry) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if a.Type != b.Type {
		return false
	}
	switch a.Type {
	case tree.File:
		return a.Hash != "" && a.Hash == b.Hash && a.Mode&0o777 == b.Mode&0o777
	case tree.Symlink:
		return a.Target == b.Target
	case tree.Dir:
		return a.Mode&0o777 == b.Mode&0o777
	}
	return false
}

// describeParallel bounds the items described at once. Each reads its guest file in a round
// trip of the runner's connection (4–10 ms on an emulated VM), which answers requests
// concurrently: 500 files one after another were most of the review's first screen.
const describeParallel = 16

// describeItems describes the items not refused, describeParallel at once, from their guest
// files read first in a few requests (pre: Build's readGuestTexts); the first error (in the
// items' order) is Build's.
func describeItems(ctx context.Context, sess *staging.Session, host *hostTree, items []*Item, pre map[string][]byte) error {
	errs := make([]error, len(items))
	sem := make(chan struct{}, describeParallel)
	var wg sync.WaitGroup
	for i, it := range items {
		if it.Refused != "" {
			continue
		}
		it.Conflict = it.Conflict || it.HostChanged()
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = describeItem(ctx, sess, host, it, pre[it.Path])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// describeItem fills in the text, hunks and description of an item, and refuses what cannot
// be applied safely. It only reads (the host's files, the guest's): items are described
// concurrently. guestData is the guest file's bytes when already read (nil: read here); either
// way they are checked against the hash the item was listed with.
func describeItem(ctx context.Context, sess *staging.Session, host *hostTree, it *Item, guestData []byte) error {
	g, b := it.Guest, it.Base
	hostPath, hostEntry := it.Path, it.Host
	if it.From != nil {
		// A rename: the diff is from the old name's version.
		b, hostPath = it.From.Base, it.From.Path
		if it.Moved {
			hostEntry = it.From.Host
		}
	}
	if g != nil {
		switch g.Type {
		case tree.Other:
			it.Refused = "a fifo, socket or device: never created on the host"
		case tree.Symlink:
			if !symlinkTargetInside(it.Path, string(g.Target)) {
				it.Refused = fmt.Sprintf("symlink to %s, outside the working directory: never created on the host", string(g.Target))
			}
		}
		if g.Mode&0o7000 != 0 && g.Type == tree.File {
			it.Description = fmt.Sprintf("setuid/setgid/sticky bits (%o) are stripped; ", g.Mode&0o7000)
		}
	}
	it.Description += oneLine(it)
	if it.Refused != "" {
		return nil
	}
	// Text content, for diffs and hunks.
	var oldText, newText []byte
	var oldBin, newBin bool // a side is binary (as git tells it)
	oldOK, newOK := b == nil || b.Type != tree.File, g == nil || g.Type != tree.File
	if it.Conflict && hostEntry != nil && hostEntry.Type == tree.File && hostEntry.Size <= MaxTextBytes {
		data, err := host.readFile(hostPath)
		if err == nil && !udiff.IsBinary(data) {
			oldText, oldOK = data, true
		}
		oldBin = err == nil && !oldOK
	} else if b != nil && b.Type == tree.File && b.Size <= MaxTextBytes && hostEntry != nil && hostEntry.Type == tree.File {
		data, err := host.readFile(hostPath)
		if err == nil && !udiff.IsBinary(data) {
			oldText, oldOK = data, true
		}
		oldBin = err == nil && !oldOK
	}
	if g != nil && g.Type == tree.File && g.Size <= MaxTextBytes {
		data, err := guestData, error(nil)
		if data == nil {
			data, err = sess.ReadGuestFile(ctx, tree.Name(it.Path), MaxTextBytes+1)
		}
		if errors.Is(err, guest.ErrTooLarge) || errors.Is(err, guest.ErrNotRegular) || errors.Is(err, fs.ErrNotExist) {
			it.Refused = "changed in the guest while the review was being prepared; review again"
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s from the guest: %w", it.Display, err)
		}
		if tree.Hash(data) != g.Hash {
			it.Refused = "changed in the guest while the review was being prepared; review again"
			return nil
		}
		if !udiff.IsBinary(data) {
			newText, newOK = data, true
		} else {
			newBin = true
		}
	}
	if !oldOK || !newOK {
		note := noTextNote(b, g, oldBin, newBin)
		if it.Description == "" || it.Kind == staging.Modified {
			it.Description = note
		} else {
			it.Description += "; " + note
		}
		return nil
	}
	it.BaseText, it.GuestText = string(oldText), string(newText)
	d := udiff.Diff(it.BaseText, it.GuestText)
	it.Hunks = d.Hunks
	if d.WholeFile != "" {
		it.Description += "; shown as a whole-file replacement (" + d.WholeFile + ")"
	}
	for _, h := range it.Hunks {
		for _, l := range h.Lines {
			switch l.Op {
			case udiff.Insert:
				it.Added++
			case udiff.Delete:
				it.Removed++
			}
		}
	}
	// Hunk by hunk only for an edit of a text file the host has not touched.
	it.Text = !it.Conflict && b != nil && g != nil && b.Type == tree.File && g.Type == tree.File && d.WholeFile == ""
	return nil
}

// oneLine says what happened to an item.
func oneLine(it *Item) string {
	what := udiff.Describe
	b := it.Base
	if it.From != nil {
		b = it.From.Base
	}
	var s string
	switch {
	case it.From != nil:
		s = "renamed from " + it.From.Path + " (only case or Unicode normalization differs)"
		if it.Moved {
			s = "renamed from " + it.From.Path
		}
		switch {
		case b == nil || b.Type != it.Guest.Type:
			s += ", now " + what(it.Guest)
		case b.Type == tree.File && b.Hash != it.Guest.Hash:
			s += ", content changed"
		case b.Type == tree.Symlink && b.Target != it.Guest.Target:
			s += ", symlink now -> " + string(it.Guest.Target)
		}
	case it.Base == nil:
		s = "added " + what(it.Guest)
	case it.Guest == nil:
		s = "deleted " + what(it.Base)
	case it.Kind == staging.ModeChanged:
		s = fmt.Sprintf("mode %o -> %o", it.Base.Mode&0o7777, it.Guest.Mode&0o7777)
		if it.Base.Mode&0o111 != it.Guest.Mode&0o111 {
			s += " (executable bit changed)"
		}
		if it.Guest.Type == tree.File && it.Base.Hash != it.Guest.Hash && it.Guest.Hash != "" {
			s += ", content changed"
		}
	case it.Base.Type != it.Guest.Type:
		s = what(it.Base) + " replaced by " + what(it.Guest)
	case it.Guest.Type == tree.Symlink:
		s = "symlink now -> " + string(it.Guest.Target) + " (was -> " + string(it.Base.Target) + ")"
	default:
		s = "modified"
	}
	if len(it.Collides) > 0 {
		s += "; COLLISION: one name with " + strings.Join(it.Collides, " and ") + " on this host directory (case or Unicode normalization): accept at most one, the others stay pending in the guest"
	}
	if it.HostChanged() {
		host := "deleted it"
		if it.Host != nil {
			host = "changed it too"
		}
		s += "; CONFLICT: the host " + host + " since it was staged"
	}
	return s
}

// noTextNote says why an item has no text diff, with the sizes: "binary file changed (1.2 KB
// → 1.4 KB)", "large file (5.0 MB), over the 4.0 MB a review shows as text".
func noTextNote(b, g *tree.Entry, oldBin, newBin bool) string {
	size := func(e *tree.Entry) string {
		if e == nil || e.Type != tree.File {
			return "none"
		}
		return sizeString(e.Size)
	}
	large := func(e *tree.Entry) bool { return e != nil && e.Type == tree.File && e.Size > MaxTextBytes }
	var what string
	switch {
	case oldBin || newBin:
		what = "binary file"
	case large(b) || large(g):
		what = "large file"
	default:
		what = "file (not shown as text)"
	}
	var s string
	switch {
	case b != nil && b.Type == tree.File && g != nil && g.Type == tree.File:
		s = fmt.Sprintf("%s changed (%s → %s)", what, size(b), size(g))
	case g != nil && g.Type == tree.File:
		s = fmt.Sprintf("%s (%s)", what, size(g))
	default:
		s = fmt.Sprintf("%s (%s)", what, size(b))
	}
	if (large(b) || large(g)) && !oldBin && !newBin {
		s += fmt.Sprintf(", over the %s a review shows as text", sizeString(MaxTextBytes))
	}
	return s
}

// sizeString is n bytes for a person: "512 B", "1.2 KB", "3.0 MB" (powers of 1024).
func sizeString(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %cB", v, "KMGT"[i])
}
