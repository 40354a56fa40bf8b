package review

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// NameRule is how the host directory's filesystem tells names apart: APFS (macOS's default)
// and NTFS do not tell case apart, and HFS+ and APFS do not tell Unicode normalization forms
// (NFC, NFD) apart. Two guest names that one rule makes equal land on one host file.
type NameRule struct {
	FoldCase  bool
	Normalize bool
}

// key is name as the rule sees it: names with one key are one file. Case is folded with
// Unicode's full case folding, which takes at least as many names for one as any filesystem
// does (more only makes a rename or a collision of names the host would tell apart: never
// one name written over another). A name that is not valid UTF-8 (which APFS, HFS+ and NTFS
// refuse) is kept as it is.
func (r NameRule) key(name string) string {
	if !utf8.ValidString(name) {
		return name
	}
	if r.Normalize {
		name = norm.NFC.String(name)
	}
	if r.FoldCase {
		name = norm.NFC.String(caseFold.String(name))
	}
	return name
}

var caseFold = cases.Fold()

// ProbeNameRule finds out the rule of the filesystem that holds dir, by looking (it writes
// nothing): an entry's name with its case swapped, and in the other normalization form, is
// the same file or not. A variable, so that tests can force either answer.
var ProbeNameRule = probeNameRule

func probeNameRule(dir string) NameRule {
	var r NameRule
	names := []string{}
	if ents, err := os.ReadDir(dir); err == nil {
		for i, e := range ents {
			if i == 500 {
				break
			}
			names = append(names, filepath.Join(dir, e.Name()))
		}
	}
	names = append(names, dir) // the directory itself, looked up in its parent
	caseFound, normFound := false, false
	for _, p := range names {
		base, parent := filepath.Base(p), filepath.Dir(p)
		if !caseFound {
			if swapped := swapCase(base); swapped != base {
				caseFound = true
				r.FoldCase = sameFile(p, filepath.Join(parent, swapped))
			}
		}
		if !normFound && utf8.ValidString(base) {
			other := norm.NFD.String(base)
			if other == base {
				other = norm.NFC.String(base)
			}
			if other != base {
				normFound = true
				r.Normalize = sameFile(p, filepath.Join(parent, other))
			}
		}
		if caseFound && normFound {
			break
		}
	}
	if !normFound {
		// No name to try it on: the filesystems that fold case (APFS, HFS+) also fold
		// normalization; the others (ext4, btrfs, xfs) fold neither.
		r.Normalize = r.FoldCase
	}
	return r
}

func swapCase(s string) string {
	return strings.Map(func(c rune) rune {
		switch {
		case unicode.IsUpper(c):
			return unicode.ToLower(c)
		case unicode.IsLower(c):
			return unicode.ToUpper(c)
		}
		return c
	}, s)
}

func sameFile(a, b string) bool {
	fa, err := os.Lstat(a)
	if err != nil {
		return false
	}
	fb, err := os.Lstat(b)
	return err == nil && os.SameFile(fa, fb)
}

// foldIndex answers, for a host directory whose rule folds names, what the host's own name for
// a path is. Each host directory is listed once, however many paths go through it.
type foldIndex struct {
	host *hostTree
	rule NameRule
	// listed maps a host directory to its entries by key.
	listed map[string]map[string][]string
}

func (r NameRule) folds() bool { return r.FoldCase || r.Normalize }

// hostName is rel as the host spells it: each component that exists on the host replaced by
// the host's entry that is one name with it under the rule. exists says the whole path
// exists; when it does not, the components from the first missing one on are rel's. Two host
// entries that are one name under the rule (possible only where the probe's answer is forced)
// are an error: which one a write would reach is unknown.
func (f *foldIndex) hostName(rel string) (name string, exists bool, err error) {
	comps := strings.Split(rel, "/")
	cur := ""
	for i, c := range comps {
		byKey, ok := f.listed[cur]
		if !ok {
			ents, _ := f.host.readDir(cur) // unreadable, absent or not a directory: nothing in it
			byKey = map[string][]string{}
			for _, e := range ents {
				byKey[f.rule.key(e)] = append(byKey[f.rule.key(e)], e)
			}
			f.listed[cur] = byKey
		}
		match := byKey[f.rule.key(c)]
		switch {
		case len(match) == 0:
			return path.Join(append([]string{cur}, comps[i:]...)...), false, nil
		case len(match) > 1:
			var names []string
			for _, m := range match {
				names = append(names, path.Join(cur, m))
			}
			return "", false, fmt.Errorf("the host has %s, which this host directory takes for one name (case or Unicode normalization): which one a write would reach is unknown; never applied", strings.Join(names, " and "))
		}
		cur = path.Join(cur, match[0])
	}
	return cur, true, nil
}

// foldGroup is what the guest and the host have under one name of the rule.
type foldGroup struct {
	items   []*Item  // the reviewed changes
	present []string // guest names that exist now (changed or not)
	deleted []string // guest names deleted
	base    []string // names in the baseline
	dirs    bool     // a directory among the entries
}

// resolveFolds turns the changes that the host's rule makes one name into what the person can
// decide, or refuses them whole. Per name under the rule the host ends with at most one entry,
// so:
//   - a change whose host name is another spelling of its own, where the guest no longer has
//     the host's name (a rename that only changes case or normalization), becomes one item
//     that renames the host's entry (Item.From), and the guest's deletion of the old name is
//     part of it;
//   - two or more guest names for one host name are a collision: each changed one is a
//     Conflict listing the others (Item.Collides), and the person accepts at most one;
//   - anything else (a directory among the names, names that differ in a parent directory,
//     a host name renamed since staging or never staged) is refused whole, with why.
//
// changes are all the guest's changes (a review of some paths still sees every name that
// collides with them); unchanged are the baseline's entries the guest has as they were.
func resolveFolds(host *hostTree, cs *Changeset, changes []staging.Change, baseline *staging.Manifest, hostNames map[*Item]string) {
	rule := cs.Rule
	if !rule.folds() {
		return
	}
	groups := map[string]*foldGroup{}
	var order []string
	for _, it := range cs.Items {
		k := rule.key(it.Path)
		g := groups[k]
		if g == nil {
			g = &foldGroup{}
			groups[k] = g
			order = append(order, k)
		}
		g.items = append(g.items, it)
	}
	changed := map[string]bool{}
	isDir := func(e *tree.Entry) bool { return e != nil && e.Type == tree.Dir }
	for _, c := range changes {
		p := string(c.Path)
		changed[p] = true
		g := groups[rule.key(p)]
		if g == nil {
			continue
		}
		if c.Now != nil {
			g.present = append(g.present, p)
		} else {
			g.deleted = append(g.deleted, p)
		}
		if c.Base != nil {
			g.base = append(g.base, p)
		}
		g.dirs = g.dirs || isDir(c.Base) || isDir(c.Now)
	}
	baseEntry := map[string]*tree.Entry{}
	if baseline != nil {
		for i := range baseline.Entries {
			e := &baseline.Entries[i]
			p := string(e.Path)
			baseEntry[p] = e
			if g := groups[rule.key(p)]; g != nil && !changed[p] {
				g.present = append(g.present, p)
				g.base = append(g.base, p)
				g.dirs = g.dirs || isDir(e)
			}
		}
	}
	absorbed := map[*Item]bool{}
	for _, k := range order {
		g := groups[k]
		hostName := ""
		names := map[string]bool{}
		for _, p := range append(append([]string{}, g.present...), g.deleted...) {
			names[p] = true
		}
		for _, it := range g.items {
			if h := hostNames[it]; h != "" {
				hostName = h
				names[h] = true
			}
			g.dirs = g.dirs || isDir(it.Host)
		}
		if len(names) < 2 {
			continue
		}
		list := sortedKeys(names)
		shown := make([]string, len(list))
		for i, n := range list {
			shown[i] = n
		}
		one := strings.Join(shown, " and ")
		refuseAll := func(why string) {
			for _, it := range g.items {
				if it.Refused == "" {
					it.Refused = why
				}
			}
		}
		var refusedBy *Item
		for _, it := range g.items {
			if it.Refused != "" && refusedBy == nil {
				refusedBy = it
			}
		}
		dirsDiffer := false
		for _, n := range list[1:] {
			dirsDiffer = dirsDiffer || path.Dir(n) != path.Dir(list[0])
		}
		// The baseline had at most one of the names, and it is the host's (when the host has one).
		staged := len(g.base) <= 1 && (hostName == "" || len(g.base) == 1 && g.base[0] == hostName)
		switch {
		case refusedBy != nil:
			refuseAll(fmt.Sprintf("not applied: %s are one name on this host directory (case or Unicode normalization), and %s is refused (%s)", one, refusedBy.Display, refusedBy.Refused))
			continue
		case dirsDiffer:
			refuseAll(fmt.Sprintf("%s are one name on this host directory, which does not tell case or Unicode normalization apart, and differ in a directory's name: never applied over each other. Give the directory one name (on the host by hand, or in the guest), then review again", one))
			continue
		case g.dirs:
			refuseAll(fmt.Sprintf("%s are one name on this host directory, which does not tell case or Unicode normalization apart, and one of them is a directory: never applied over each other or merged. Keep one name in the guest (rename or remove the others there), or rename it on the host by hand, then review again", one))
			continue
		case hostName != "" && len(g.base) == 0:
			refuseAll(fmt.Sprintf("the host has %s, which this host directory does not tell apart from %s (case or Unicode normalization), and which was never staged or was made since: applied, the agent's would overwrite it. Use the host's name in the guest, then review again", hostName, strings.Join(shownExcept(list, hostName), " and ")))
			continue
		case !staged:
			refuseAll(fmt.Sprintf("%s are one name on this host directory (case or Unicode normalization), and the host's name is not the one that was staged (renamed on the host since): never applied over each other. Rename it back on the host, or use the host's name in the guest, then review again", one))
			continue
		}
		// The old name: the host's, else the one the baseline has (the host deleted it).
		old := hostName
		if old == "" && len(g.base) == 1 {
			old = g.base[0]
		}
		var oldItem *Item // the guest's deletion of the old name
		for _, it := range g.items {
			if it.Path == old && it.Guest == nil {
				oldItem = it
			}
		}
		if old != "" && oldItem == nil {
			// The guest still has the old name (changed or not): removing it on the host is
			// part of accepting another name; the guest's own change of it, if any, is a
			// candidate of its own, written in place.
			oldItem = &Item{Path: old, Display: shownPath(old), Kind: staging.Deleted, Base: baseEntry[old]}
		}
		if oldItem != nil {
			var err error
			if oldItem.Host, err = host.entry(old); err != nil {
				refuseAll(err.Error())
				continue
			}
		}
		var cands []*Item
		for _, it := range g.items {
			if it.Guest != nil {
				cands = append(cands, it)
			}
		}
		for _, it := range cands {
			if oldItem != nil && it.Path != old {
				it.From = oldItem
				it.Host = oldItem.Host
			}
			if len(g.present) > 1 {
				it.Collides = without(sortedStrings(g.present), it.Path)
				it.Conflict = true
			}
		}
		if oldItem != nil && oldItem.Guest == nil && len(cands) > 0 && containsItem(g.items, oldItem) {
			absorbed[oldItem] = true
		}
	}
	if len(absorbed) > 0 {
		kept := cs.Items[:0]
		for _, it := range cs.Items {
			if !absorbed[it] {
				kept = append(kept, it)
			}
		}
		cs.Items = kept
	}
}

func containsItem(its []*Item, it *Item) bool {
	for _, x := range its {
		if x == it {
			return true
		}
	}
	return false
}

func sortedStrings(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

// without is names without name.
func without(names []string, name string) []string {
	var out []string
	for _, n := range names {
		if n != name {
			out = append(out, n)
		}
	}
	return out
}

// shownExcept is names without name, each made safe to print.
func shownExcept(names []string, name string) []string {
	var out []string
	for _, n := range names {
		if n != name {
			out = append(out, n)
		}
	}
	return out
}
