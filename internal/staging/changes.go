package staging

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/ignore"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Kind is what happened to a path.
type Kind string

// Kinds of change.
const (
	Added       Kind = "added"
	Modified    Kind = "modified"
	Deleted     Kind = "deleted"
	ModeChanged Kind = "mode-changed"
	TypeChanged Kind = "type-changed"
	LinkChanged Kind = "symlink-changed"
)

// Change is one path that differs from the baseline.
type Change struct {
	Path tree.Name `json:"path"`
	Kind Kind      `json:"kind"`
	// Base is the baseline entry (nil when added); Now is the entry as it is now (nil when
	// deleted). For a file, Now.Hash is set when it was computed.
	Base *tree.Entry `json:"base,omitempty"`
	Now  *tree.Entry `json:"now,omitempty"`
	// ContentChanged is set with ModeChanged when the content changed too.
	ContentChanged bool `json:"content_changed,omitempty"`
}

// ChangeSet is the result of comparing a tree with the baseline.
type ChangeSet struct {
	Changes []Change `json:"changes"`
	// GitMetadata lists what the guest changed of git's machinery: the top-level .git/config
	// and .git/hooks files that differ from the host's, and any change under a .git at any
	// depth (IsGitMetadata). Never applied (it could run code on the host), only reported.
	GitMetadata []tree.Name   `json:"git_metadata,omitempty"`
	Scanned     int           `json:"scanned"`
	Hashed      int           `json:"hashed"`
	Duration    time.Duration `json:"duration_ns"`
}

// Counts tallies the changes by kind.
func (cs *ChangeSet) Counts() map[Kind]int {
	c := map[Kind]int{}
	for _, ch := range cs.Changes {
		c[ch.Kind]++
	}
	return c
}

// entryFromScan is a guest listing entry as staging compares it: no mtime for directories and
// links, and no hash (the runner's listing carries none; a hash is asked for apart).
func entryFromScan(e tree.Entry) tree.Entry {
	e.Hash = ""
	if e.Type == tree.Dir || e.Type == tree.Symlink {
		e.MTime = 0
	}
	return e
}

// compare finds the changes of now against base. Files of the same size whose mtime differs
// (in whole seconds) are content candidates: hash is called for them, and returns their
// hashes ("" for unreadable ones). So are racy files: those whose baseline mtime is no older
// than a second before the baseline was recorded (recorded, unix seconds), since an edit made
// within that same second keeps the mtime second (git's "racily clean" entries).
func compare(base *Manifest, now []tree.Entry, hash func(paths []tree.Name) ([]string, error), keepDirs bool, recorded int64) ([]Change, int, error) {
	baseIdx := base.Index()
	nowIdx := make(map[tree.Name]*tree.Entry, len(now))
	var changes []Change
	var candidates []int // indexes into changes of unresolved content checks
	for i := range now {
		n := &now[i]
		nowIdx[n.Path] = n
		b, ok := baseIdx[n.Path]
		switch {
		case !ok:
			changes = append(changes, Change{Path: n.Path, Kind: Added, Now: n})
		case b.Type != n.Type:
			changes = append(changes, Change{Path: n.Path, Kind: TypeChanged, Base: b, Now: n})
		case n.Type == tree.Symlink:
			if b.Target != n.Target {
				changes = append(changes, Change{Path: n.Path, Kind: LinkChanged, Base: b, Now: n})
			}
		case n.Type == tree.Dir:
			if b.Mode != n.Mode {
				changes = append(changes, Change{Path: n.Path, Kind: ModeChanged, Base: b, Now: n})
			}
		case n.Type == tree.File:
			modeChanged := b.Mode != n.Mode
			switch {
			case b.Size != n.Size:
				c := Change{Path: n.Path, Kind: Modified, Base: b, Now: n}
				if modeChanged {
					c.Kind, c.ContentChanged = ModeChanged, true
				}
				changes = append(changes, c)
			case b.MTime/1e9 != n.MTime/1e9 || (n.Hash != "" && n.Hash != b.Hash) || b.MTime/1e9 >= recorded-1:
				changes = append(changes, Change{Path: n.Path, Kind: Modified, Base: b, Now: n})
				candidates = append(candidates, len(changes)-1)
			case modeChanged:
				changes = append(changes, Change{Path: n.Path, Kind: ModeChanged, Base: b, Now: n})
			}
		}
	}
	for i := range base.Entries {
		b := &base.Entries[i]
		if _, ok := nowIdx[b.Path]; !ok {
			changes = append(changes, Change{Path: b.Path, Kind: Deleted, Base: b})
		}
	}
	hashed := 0
	if len(candidates) > 0 {
		var paths []tree.Name
		var need []int
		for _, ci := range candidates {
			if changes[ci].Now.Hash == "" {
				paths = append(paths, changes[ci].Path)
				need = append(need, ci)
			}
		}
		if len(paths) > 0 {
			hs, err := hash(paths)
			if err != nil {
				return nil, 0, err
			}
			hashed = len(hs)
			for k, ci := range need {
				changes[ci].Now.Hash = hs[k]
			}
		}
		keep := changes[:0]
		drop := map[int]bool{}
		for _, ci := range candidates {
			c := &changes[ci]
			if c.Now.Hash != "" && c.Now.Hash == c.Base.Hash {
				if c.Base.Mode != c.Now.Mode {
					c.Kind = ModeChanged
				} else {
					drop[ci] = true // touched, not changed
				}
			} else if c.Base.Mode != c.Now.Mode {
				c.Kind, c.ContentChanged = ModeChanged, true
			}
		}
		for i, c := range changes {
			if !drop[i] {
				keep = append(keep, c)
			}
		}
		changes = keep
	}
	if !keepDirs {
		changes = dropImpliedDirs(changes)
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return changes, hashed, nil
}

// dropImpliedDirs leaves out an added (or deleted) directory when something added (or
// deleted) inside it already says so.
func dropImpliedDirs(changes []Change) []Change {
	parents := map[Kind]map[string]bool{Added: {}, Deleted: {}}
	for _, c := range changes {
		if c.Kind != Added && c.Kind != Deleted {
			continue
		}
		for d := path.Dir(string(c.Path)); d != "." && d != "/"; d = path.Dir(d) {
			parents[c.Kind][d] = true
		}
	}
	out := changes[:0]
	for _, c := range changes {
		isDir := (c.Now != nil && c.Now.Type == tree.Dir) || (c.Now == nil && c.Base != nil && c.Base.Type == tree.Dir)
		if isDir && (c.Kind == Added || c.Kind == Deleted) && parents[c.Kind][string(c.Path)] {
			continue
		}
		out = append(out, c)
	}
	return out
}

// GuestChanges compares the staged copy in the guest with the baseline: one listing of the
// tree, then hashes only for files whose size is unchanged but whose mtime moved. An added or
// deleted directory is left out when a change inside it says so.
func (s *Session) GuestChanges(ctx context.Context) (*ChangeSet, error) {
	return s.guestChanges(ctx, false)
}

// GuestChangesAll is GuestChanges with every directory change listed.
func (s *Session) GuestChangesAll(ctx context.Context) (*ChangeSet, error) {
	return s.guestChanges(ctx, true)
}

func (s *Session) guestChanges(ctx context.Context, keepDirs bool) (*ChangeSet, error) {
	start := time.Now()
	scan, err := s.conn.Scan(ctx, s.scanRequest())
	if err != nil {
		return nil, err
	}
	if scan.RootMissing {
		return nil, errGuestCopyGone(s.State)
	}
	now := make([]tree.Entry, 0, len(scan.Entries))
	for _, se := range scan.Entries {
		now = append(now, entryFromScan(se))
	}
	changes, hashed, err := compare(s.Baseline, now, func(paths []tree.Name) ([]string, error) {
		return s.conn.Hash(ctx, s.State.GuestPath, paths)
	}, keepDirs, s.State.UpdatedAt.Unix())
	if err != nil {
		return nil, err
	}
	gitMeta, err := s.gitMetadataChanges(ctx, scan.Also)
	if err != nil {
		return nil, err
	}
	// Nested repositories' metadata (and any .git the agent made) is reported apart, never as
	// a change.
	seen := map[tree.Name]bool{}
	for _, m := range gitMeta {
		seen[m] = true
	}
	kept := changes[:0]
	for _, c := range changes {
		if !IsGitMetadata(string(c.Path)) {
			kept = append(kept, c)
			continue
		}
		if r := tree.Name(gitMetadataRoot(string(c.Path))); !seen[r] {
			seen[r] = true
			gitMeta = append(gitMeta, r)
		}
	}
	changes = kept
	sort.Slice(gitMeta, func(i, j int) bool { return gitMeta[i] < gitMeta[j] })
	return &ChangeSet{Changes: changes, GitMetadata: gitMeta, Scanned: len(scan.Entries), Hashed: hashed, Duration: time.Since(start)}, nil
}

// gitMetadataPaths are the parts of .git that can make the host run code.
var gitMetadataPaths = []tree.Name{".git/config", ".git/hooks"}

// gitMetadataChanges compares the guest's .git/config and hooks with the host's.
func (s *Session) gitMetadataChanges(ctx context.Context, guest []tree.Entry) ([]tree.Name, error) {
	var differ, toHash []tree.Name
	hostHash := map[tree.Name]string{}
	for _, g := range guest {
		if g.Type == tree.Dir {
			continue
		}
		fi, err := os.Lstat(filepath.Join(s.State.Workdir, filepath.FromSlash(string(g.Path))))
		switch {
		case err != nil || g.Type != tree.File || !fi.Mode().IsRegular() || fi.Size() != g.Size || uint32(fi.Mode().Perm())&0o111 != g.Mode&0o111:
			differ = append(differ, g.Path)
		default:
			toHash = append(toHash, g.Path)
			hostHash[g.Path] = HashHostFile(s.State.Workdir, string(g.Path))
		}
	}
	hs, err := s.conn.Hash(ctx, s.State.GuestPath, toHash)
	if err != nil {
		return nil, err
	}
	for i, p := range toHash {
		if hs[i] != hostHash[p] {
			differ = append(differ, p)
		}
	}
	sort.Slice(differ, func(i, j int) bool { return differ[i] < differ[j] })
	return differ, nil
}

// scanRequest lists the staged tree with the session's ignore patterns, keeping baseline
// paths that the patterns would skip (tracked files that match .gitignore).
func (s *Session) scanRequest() runnerproto.ScanRequest {
	req := runnerproto.ScanRequest{Root: s.State.GuestPath, Also: gitMetadataPaths}
	for _, p := range s.State.Patterns {
		req.Patterns = append(req.Patterns, tree.Pattern{Line: p.Line, Dir: p.Dir})
	}
	m := ignore.New(s.State.Patterns)
	for _, e := range s.Baseline.Entries {
		if m.Ignored(string(e.Path), e.Type == tree.Dir) || underIgnored(m, string(e.Path)) {
			req.Keep = append(req.Keep, e.Path)
		}
	}
	return req
}

// underIgnored says whether a parent directory of rel is ignored.
func underIgnored(m *ignore.Matcher, rel string) bool {
	for d := path.Dir(rel); d != "." && d != "/"; d = path.Dir(d) {
		if m.Ignored(d, true) {
			return true
		}
	}
	return false
}

// HostChanges compares the working directory on the host with the baseline.
func HostChanges(ctx context.Context, st *State, base *Manifest) (*ChangeSet, error) {
	start := time.Now()
	sel, err := Select(ctx, st.Workdir, SelectOptions{Excludes: st.Excludes, IncludeIgnored: st.IncludeIgnored})
	if err != nil {
		return nil, err
	}
	changes, hashed, err := compare(base, sel.Entries, func(paths []tree.Name) ([]string, error) {
		hs := make([]string, len(paths))
		for i, p := range paths {
			hs[i] = HashHostFile(st.Workdir, string(p))
		}
		return hs, nil
	}, false, st.UpdatedAt.Unix())
	if err != nil {
		return nil, err
	}
	return &ChangeSet{Changes: changes, Scanned: len(sel.Entries), Hashed: hashed, Duration: time.Since(start)}, nil
}
