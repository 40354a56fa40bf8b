package staging

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Comparing sessions: for each path any of them changed, which changed it and how, and
// whether the sessions that changed it agree (the same result) or differ. Each session's
// changes are its pending changes (against its own baseline); forks share their origin's
// baseline until one of them applies or syncs, and BaselinesDiffer says when they no longer do.

// MaxCompareDiffs bounds the diffs a comparison reads per session to count lines (a diff is a
// read of the guest's file); past it, a change's line counts are unknown (-1).
const MaxCompareDiffs = 2000

// Comparison is what Compare found.
type Comparison struct {
	Sessions []ComparedSession `json:"sessions"`
	Files    []ComparedFile    `json:"files"`
	// BaselinesDiffer lists the paths whose baseline is not the same in every session (one of
	// them applied or synced since they were forked): their changes are against different
	// host states.
	BaselinesDiffer []tree.Name `json:"baselines_differ"`
}

// ComparedSession is one session of a comparison.
type ComparedSession struct {
	// Name is the session's name ("default" for the unnamed one).
	Name    string      `json:"name"`
	Changes int         `json:"changes"`
	Fork    *ForkOrigin `json:"fork,omitempty"`
}

// ComparedFile is a path one or more sessions changed.
type ComparedFile struct {
	Path tree.Name `json:"path"`
	// Changes has one entry per session that changed the path, in the sessions' order.
	Changes []SessionChange `json:"changes"`
	// Unchanged names the sessions that left it as their baseline has it.
	Unchanged []string `json:"unchanged"`
	// Verdict is "only" (one session changed it), "agree" (all that changed it made the same
	// result), or "differ".
	Verdict string `json:"verdict"`
	// Variants groups the sessions that changed it by result: one group per distinct result.
	Variants [][]string `json:"variants"`
}

// SessionChange is how one session changed a path.
type SessionChange struct {
	Session string `json:"session"`
	Kind    Kind   `json:"kind"`
	// Added and Deleted count the diff's lines against the baseline (-1: not counted: a
	// binary or large file, a symlink or directory, or past MaxCompareDiffs).
	Added   int `json:"added"`
	Deleted int `json:"deleted"`
	// Result identifies what the session has at the path (type, mode and content hash, or
	// target): equal results are the same file.
	Result string `json:"result"`
}

// Compare compares the pending changes of sessions (two or more, of one working directory).
// Each session is read through its own connection; what they hold is untrusted like any
// guest answer, and only compared and counted here.
func Compare(ctx context.Context, sessions []*Session) (*Comparison, error) {
	out := &Comparison{Files: []ComparedFile{}, BaselinesDiffer: []tree.Name{}}
	byPath := map[tree.Name]map[int]SessionChange{}
	for i, s := range sessions {
		cs, err := s.GuestChanges(ctx)
		if err != nil {
			return nil, fmt.Errorf("session %s: %w", SessionLabel(s.State.Session), err)
		}
		if err := hashChanged(ctx, s, cs.Changes); err != nil {
			return nil, fmt.Errorf("session %s: %w", SessionLabel(s.State.Session), err)
		}
		name := SessionLabel(s.State.Session)
		out.Sessions = append(out.Sessions, ComparedSession{Name: name, Changes: len(cs.Changes), Fork: s.State.Fork})
		for n, c := range cs.Changes {
			sc := SessionChange{Session: name, Kind: c.Kind, Added: -1, Deleted: -1, Result: resultOf(c.Now)}
			if n < MaxCompareDiffs {
				if d, err := s.Diff(ctx, c); err == nil {
					sc.Added, sc.Deleted = countDiffLines(d)
				}
			}
			if byPath[c.Path] == nil {
				byPath[c.Path] = map[int]SessionChange{}
			}
			byPath[c.Path][i] = sc
		}
	}
	paths := make([]tree.Name, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool { return paths[i] < paths[j] })
	for _, p := range paths {
		f := ComparedFile{Path: p, Unchanged: []string{}}
		groups := map[string]int{}
		for i := range sessions {
			sc, ok := byPath[p][i]
			if !ok {
				f.Unchanged = append(f.Unchanged, out.Sessions[i].Name)
				continue
			}
			f.Changes = append(f.Changes, sc)
			g, seen := groups[sc.Result]
			if !seen {
				g = len(f.Variants)
				groups[sc.Result] = g
				f.Variants = append(f.Variants, nil)
			}
			f.Variants[g] = append(f.Variants[g], sc.Session)
		}
		switch {
		case len(f.Changes) == 1:
			f.Verdict = "only"
		case len(f.Variants) == 1:
			f.Verdict = "agree"
		default:
			f.Verdict = "differ"
		}
		out.Files = append(out.Files, f)
	}
	out.BaselinesDiffer = baselinesDiffer(sessions)
	return out, nil
}

// hashChanged fills in the hash of every changed file that change detection did not hash (a
// file whose size changed), in one request: results are compared by content.
func hashChanged(ctx context.Context, s *Session, changes []Change) error {
	var paths []tree.Name
	var at []int
	for i, c := range changes {
		if c.Now != nil && c.Now.Type == tree.File && c.Now.Hash == "" {
			paths = append(paths, c.Path)
			at = append(at, i)
		}
	}
	if len(paths) == 0 {
		return nil
	}
	hs, err := s.HashGuestFiles(ctx, paths)
	if err != nil {
		return err
	}
	if len(hs) != len(paths) {
		return fmt.Errorf("the guest answered %d hashes for %d files", len(hs), len(paths))
	}
	for j, i := range at {
		e := *changes[i].Now
		e.Hash = hs[j]
		changes[i].Now = &e
	}
	return nil
}

// resultOf identifies an entry's content for comparison ("deleted" for none).
func resultOf(e *tree.Entry) string {
	switch {
	case e == nil:
		return "deleted"
	case e.Type == tree.Symlink:
		return "symlink " + string(e.Target)
	case e.Type == tree.Dir:
		return fmt.Sprintf("dir %o", e.Mode)
	}
	// A file without a hash is one the guest could not read (hashChanged): told apart by its
	// size and mtime only, never equal to a hashed one, so two sessions agree only when the
	// content is known to be the same.
	if e.Hash != "" {
		return fmt.Sprintf("%s %o %s", e.Type, e.Mode, e.Hash)
	}
	return fmt.Sprintf("%s %o size %d mtime %d", e.Type, e.Mode, e.Size, e.MTime)
}

// countDiffLines counts a unified diff's added and removed lines (-1, -1 for a diff without
// text: binary, a symlink, a mode change only).
func countDiffLines(d string) (added, deleted int) {
	inHunk := false
	for _, l := range strings.Split(d, "\n") {
		switch {
		case strings.HasPrefix(l, "@@"):
			inHunk = true
		case !inHunk:
			// The header (diff --git, mode lines, --- and +++): a removed line "-- x" is
			// "--- x" in a hunk, so the header ends at the first hunk.
		case strings.HasPrefix(l, "+"):
			added++
		case strings.HasPrefix(l, "-"):
			deleted++
		}
	}
	if !inHunk {
		return -1, -1
	}
	return added, deleted
}

// baselinesDiffer lists the paths whose baseline entry is not the same in every session.
func baselinesDiffer(sessions []*Session) []tree.Name {
	out := []tree.Name{}
	if len(sessions) < 2 {
		return out
	}
	key := func(e *tree.Entry) string {
		if e == nil {
			return ""
		}
		return fmt.Sprintf("%s %o %d %s %s", e.Type, e.Mode, e.Size, e.Hash, e.Target)
	}
	idx := make([]map[tree.Name]*tree.Entry, len(sessions))
	all := map[tree.Name]bool{}
	for i, s := range sessions {
		idx[i] = s.Baseline.Index()
		for p := range idx[i] {
			all[p] = true
		}
	}
	for p := range all {
		k := key(idx[0][p])
		for i := 1; i < len(idx); i++ {
			if key(idx[i][p]) != k {
				out = append(out, p)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
