package review

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
)

// NameRule is how the host directory's filesystem tells names apart: APFS (macOS's default)
// and NTFS do not tell case apart, and HFS+ and APFS do not tell Unicode normalization forms
// (NFC, NFD) apart. Two guest names that one rule makes equal land on one host file.
type NameRule struct {
	FoldCase  bool
	Normalize bool
}

// key is name as the rule sees it: names with one key are one file.
func (r NameRule) key(name string) string {
	if r.Normalize && utf8.ValidString(name) {
		name = norm.NFC.String(name)
	}
	if r.FoldCase {
		name = strings.ToLower(name)
	}
	return name
}

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

// refuseCollisions refuses, whole, the changes whose paths the host's name rule makes one:
// two guest names that would land on one host file (README.md and readme.md), a rename that
// only changes case or normalization, and a new name that is an existing host entry's under
// the rule. Applied, one would overwrite the other, or a deletion remove the other. On a host
// that tells every name apart, nothing changes.
func refuseCollisions(host *hostTree, cs *Changeset, rule NameRule) {
	if !rule.FoldCase && !rule.Normalize {
		return
	}
	groups := map[string][]*Item{}
	var order []string
	for _, it := range cs.Items {
		k := rule.key(it.Path)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], it)
	}
	for _, k := range order {
		its := groups[k]
		if len(its) < 2 {
			continue
		}
		var names []string
		for _, it := range its {
			names = append(names, termsafe.Path(it.Path))
		}
		why := fmt.Sprintf("%s are one name on this host directory, which does not tell case or Unicode normalization apart: applied, one would overwrite or delete the other. Keep one name in the guest (rename or remove the others there), then review again", strings.Join(names, " and "))
		if len(its) == 2 && (its[0].Guest == nil) != (its[1].Guest == nil) {
			from, to := its[0], its[1]
			if from.Guest != nil {
				from, to = to, from
			}
			why = fmt.Sprintf("a rename that only changes case or Unicode normalization (%s → %s), which this host directory cannot tell apart: applied as a deletion and an addition, it would lose the file. Rename it on the host by hand (git mv), then review again", termsafe.Path(from.Path), termsafe.Path(to.Path))
		}
		for _, it := range its {
			if it.Refused == "" {
				it.Refused = why
			}
		}
	}
	// A new name that an existing host entry has under the rule, with other letters. Each
	// host directory is listed once, however many new names it gets.
	listed := map[string][]string{}
	for _, it := range cs.Items {
		if it.Refused != "" || it.Guest == nil || it.Base != nil {
			continue
		}
		parent, base := path.Split(it.Path)
		dir := strings.TrimSuffix(parent, "/")
		ents, ok := listed[dir]
		if !ok {
			ents, _ = host.readDir(dir) // unreadable or absent: nothing to collide with
			listed[dir] = ents
		}
		for _, e := range ents {
			if e != base && rule.key(e) == rule.key(base) {
				it.Refused = fmt.Sprintf("the host has %s, which this host directory does not tell apart from %s (case or Unicode normalization): applied, the agent's would overwrite or merge into it. Use the host's name in the guest, then review again", termsafe.Path(path.Join(parent, e)), termsafe.Path(it.Path))
				break
			}
		}
	}
}
