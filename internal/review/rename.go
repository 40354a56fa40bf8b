package review

import (
	"context"
	"sort"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Renames the agent made: a path the guest deleted and another it added, with the same
// content (git's rename at 100% similarity) or similar text (git's rule: at least half of the
// content in common), are one item, shown as a rename with its diff and applied as one change
// (the old name's removal and the new name's write, both or neither: the pair a rename under
// the host's name rule already is). Only what is safe to pair is paired: the old name
// unchanged on the host since it was staged, the new name absent there, neither refused nor
// one name with another on a host directory that folds names. Anything else stays a deletion
// and an addition, as before.

// renameMinSimilarity is git's default (-M50%): the share of the larger file's bytes that
// must be in lines the other file has too.
const renameMinSimilarity = 0.5

// renameMaxPairs bounds the similarity pairs compared (git's diff.renameLimit is about the
// same idea): beyond it only identical content is paired, so a change of thousands of
// deletions and additions does not compare each with each.
const renameMaxPairs = 100 * 100

// renameCandidate says whether it may be one half of a rename: a deletion (old) or an
// addition (new) of a regular file, safe to pair.
func renameCandidate(it *Item) (old, new bool) {
	if it.Refused != "" || it.From != nil || len(it.Collides) > 0 || it.Conflict {
		return false, false
	}
	if it.Guest == nil && it.Base != nil && it.Base.Type == tree.File && sameEntry(it.Base, it.Host) {
		return true, false
	}
	if it.Base == nil && it.Guest != nil && it.Guest.Type == tree.File && it.Host == nil && it.Guest.Hash != "" {
		return false, true
	}
	return false, false
}

// pairRenames makes a rename of every deletion and addition of identical content (before the
// items are described: the new name's diff is then from the old name's version). Of several
// candidates, the one with the same base name is taken first, then the first by path.
func pairRenames(cs *Changeset) {
	olds := map[string][]*Item{} // content hash → deleted items
	var news []*Item
	for _, it := range cs.Items {
		switch o, n := renameCandidate(it); {
		case o:
			olds[it.Host.Hash] = append(olds[it.Host.Hash], it)
		case n:
			news = append(news, it)
		}
	}
	if len(olds) == 0 || len(news) == 0 {
		return
	}
	sort.Slice(news, func(i, j int) bool { return news[i].Path < news[j].Path })
	used := map[*Item]bool{}
	for _, n := range news {
		var best *Item
		rank := func(o *Item) int { // the same base name first
			if baseName(o.Path) == baseName(n.Path) {
				return 0
			}
			return 1
		}
		for _, o := range olds[n.Guest.Hash] {
			if !used[o] && (best == nil || rank(o) < rank(best) || rank(o) == rank(best) && o.Path < best.Path) {
				best = o
			}
		}
		if best != nil {
			used[best] = true
			makeRename(n, best)
		}
	}
	dropAbsorbed(cs, used)
}

// pairSimilarRenames makes a rename of a deletion and an addition of text files whose
// content is similar (git's rule), after the items are described (their texts are known);
// the new name is described again, with the diff from the old name's version.
func pairSimilarRenames(ctx context.Context, sess *staging.Session, host *hostTree, cs *Changeset) error {
	var olds, news []*Item
	for _, it := range cs.Items {
		o, n := renameCandidate(it)
		switch {
		case o && it.BaseText != "":
			olds = append(olds, it)
		case n && it.GuestText != "":
			news = append(news, it)
		}
	}
	if len(olds) == 0 || len(news) == 0 || len(olds)*len(news) > renameMaxPairs {
		return nil
	}
	type pair struct {
		o, n  *Item
		score float64
	}
	var pairs []pair
	oldLines := make([]map[string]int, len(olds))
	for i, o := range olds {
		oldLines[i] = lineCounts(o.BaseText)
	}
	for _, n := range news {
		nl := lineCounts(n.GuestText)
		for i, o := range olds {
			if s := similarity(oldLines[i], nl, len(o.BaseText), len(n.GuestText)); s >= renameMinSimilarity {
				pairs = append(pairs, pair{o, n, s})
			}
		}
	}
	// The most similar first (git pairs the best matches first), then by path.
	sort.SliceStable(pairs, func(i, j int) bool {
		if pairs[i].score != pairs[j].score {
			return pairs[i].score > pairs[j].score
		}
		if pairs[i].n.Path != pairs[j].n.Path {
			return pairs[i].n.Path < pairs[j].n.Path
		}
		return pairs[i].o.Path < pairs[j].o.Path
	})
	used := map[*Item]bool{}
	for _, p := range pairs {
		if used[p.o] || used[p.n] {
			continue
		}
		used[p.o], used[p.n] = true, true
		n := p.n
		*n = Item{Path: n.Path, Display: n.Display, Kind: n.Kind, Base: n.Base, Guest: n.Guest, Host: n.Host}
		makeRename(n, p.o)
		if err := describeItem(ctx, sess, host, n, nil); err != nil {
			return err
		}
	}
	for _, p := range pairs {
		delete(used, p.n)
	}
	dropAbsorbed(cs, used)
	return nil
}

// makeRename makes n (an addition) the rename of old (a deletion).
func makeRename(n, old *Item) {
	n.From, n.Moved = old, true
}

// dropAbsorbed removes the deletions that became the old half of a rename.
func dropAbsorbed(cs *Changeset, absorbed map[*Item]bool) {
	if len(absorbed) == 0 {
		return
	}
	kept := cs.Items[:0]
	for _, it := range cs.Items {
		if !absorbed[it] {
			kept = append(kept, it)
		}
	}
	cs.Items = kept
}

func baseName(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// lineCounts counts each line (with its end) of s.
func lineCounts(s string) map[string]int {
	m := map[string]int{}
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			i = len(s) - 1
		}
		m[s[:i+1]]++
		s = s[i+1:]
	}
	return m
}

// similarity is the share of the larger text's bytes in lines both have (as often as both
// have them): an estimate of git's similarity index, which counts the bytes of the new file
// copied from the old one, by chunks.
func similarity(a, b map[string]int, lenA, lenB int) float64 {
	if lenA == 0 || lenB == 0 {
		return 0
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	common := 0
	for l, n := range a {
		common += len(l) * min(n, b[l])
	}
	return float64(common) / float64(max(lenA, lenB))
}
