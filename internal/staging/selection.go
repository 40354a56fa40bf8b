package staging

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/ignore"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// SelectOptions say what of the working directory is staged.
type SelectOptions struct {
	// Excludes are extra gitignore patterns (--exclude).
	Excludes []string
	// IncludeIgnored stages what .gitignore ignores (--include-ignored).
	IncludeIgnored bool
}

// Selection is what of the working directory goes to the guest.
type Selection struct {
	// Entries are the files, directories and symlinks to stage (no hashes yet), sorted.
	Entries []tree.Entry
	// GitDir lists the entries of .git (staged so git works in the guest, never reviewed).
	GitDir []tree.Entry
	// Skipped lists special files (sockets, fifos, devices) left on the host.
	Skipped []string
	// Patterns are the ignore patterns, for the guest to skip the same paths.
	Patterns []tree.Pattern
	// InGitRepo says the list came from git.
	InGitRepo bool
}

// Select decides what of workdir is staged. In a git work tree it asks git (tracked files and
// untracked files that are not ignored); elsewhere it walks the tree with .gitignore
// semantics. Both honour the project ignore file and opts.Excludes.
func Select(ctx context.Context, workdir string, opts SelectOptions) (*Selection, error) {
	fi, err := os.Stat(workdir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", workdir)
	}
	allPatterns, err := ignore.Collect(workdir, ignore.Options{Excludes: opts.Excludes, NoGitignore: opts.IncludeIgnored})
	if err != nil {
		return nil, err
	}
	sel := &Selection{Patterns: allPatterns}
	// The project's own rules (ignore file, --exclude) apply even to tracked files.
	projectOnly, _ := ignore.Collect(workdir, ignore.Options{Excludes: opts.Excludes, NoGitignore: true})
	project := ignore.New(projectOnly)

	// Walking the tree finds directories (empty ones too) and special files to report; git
	// lists neither.
	walked, err := walk(workdir, ignore.New(allPatterns))
	if err != nil {
		return nil, err
	}
	names := walked
	if files, ok := gitFiles(ctx, workdir, opts.IncludeIgnored); ok {
		sel.InGitRepo = true
		names = files
		var extra []string
		for _, w := range walked {
			fi, err := os.Lstat(filepath.Join(workdir, filepath.FromSlash(w)))
			if err == nil && (fi.IsDir() || !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0) && !inNestedRepo(workdir, w) {
				extra = append(extra, w) // (a nested repository's own list says what of it is staged)
			}
		}
		if !opts.IncludeIgnored {
			extra = notIgnoredByGit(ctx, workdir, extra)
		}
		names = append(names, extra...)
	}
	seen := map[string]bool{}
	var add func(rel string) error
	add = func(rel string) error {
		if rel == "" || rel == "." || seen[rel] || project.Ignored(rel, false) {
			return nil
		}
		if first, _, _ := strings.Cut(rel, "/"); first == ".git" {
			return nil
		}
		fi, err := os.Lstat(filepath.Join(workdir, filepath.FromSlash(rel)))
		if errors.Is(err, fs.ErrNotExist) {
			return nil // a tracked file deleted in the work tree
		}
		if err != nil {
			return err
		}
		e, ok := hostEntry(workdir, rel, fi)
		if !ok {
			sel.Skipped = append(sel.Skipped, rel)
			return nil
		}
		if e.Type == tree.Dir && project.Ignored(rel, true) {
			return nil
		}
		seen[rel] = true
		sel.Entries = append(sel.Entries, e)
		if e.Type == tree.Dir && sel.InGitRepo && isGitLink(workdir, rel) {
			// A submodule or a nested clone: what its own git lists, with its own ignore
			// rules (its ignored .env stays on the host), plus its .git, so that git works
			// there in the guest (git metadata: never reviewed, see IsGitMetadata).
			sub, err := nestedRepoFiles(ctx, filepath.Join(workdir, filepath.FromSlash(rel)), opts)
			if err != nil {
				return err
			}
			for _, s := range sub {
				if err := add(rel + "/" + s); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, n := range names {
		if err := add(strings.TrimSuffix(n, "/")); err != nil {
			return nil, err
		}
	}
	// Every parent directory of what is staged exists in the guest too.
	for _, e := range append([]tree.Entry(nil), sel.Entries...) {
		for d := path.Dir(string(e.Path)); d != "." && !seen[d]; d = path.Dir(d) {
			if err := add(d); err != nil {
				return nil, err
			}
		}
	}
	if gitDir := filepath.Join(workdir, ".git"); isDir(gitDir) {
		names, err := walk(gitDir, nil)
		if err != nil {
			return nil, err
		}
		sel.GitDir = append(sel.GitDir, tree.Entry{Path: ".git", Type: tree.Dir, Mode: 0o755})
		for _, n := range names {
			rel := ".git/" + n
			fi, err := os.Lstat(filepath.Join(workdir, filepath.FromSlash(rel)))
			if err != nil {
				continue
			}
			if e, ok := hostEntry(workdir, rel, fi); ok {
				sel.GitDir = append(sel.GitDir, e)
			}
		}
	}
	sort.Slice(sel.Entries, func(i, j int) bool { return sel.Entries[i].Path < sel.Entries[j].Path })
	sort.Strings(sel.Skipped)
	return sel, nil
}

// nestedRepoFiles lists what of a nested repository (a submodule, a nested clone) is staged,
// relative to it: what its git lists under its own rules, and its .git whole.
func nestedRepoFiles(ctx context.Context, dir string, opts SelectOptions) ([]string, error) {
	files, ok := gitFiles(ctx, dir, opts.IncludeIgnored)
	if !ok {
		// git cannot read it (a broken clone): its ignore files still apply.
		pats, err := ignore.Collect(dir, ignore.Options{Excludes: opts.Excludes, NoGitignore: opts.IncludeIgnored})
		if err != nil {
			return nil, err
		}
		if files, err = walk(dir, ignore.New(pats)); err != nil {
			return nil, err
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
		files = append(files, ".git")
		if fi.IsDir() {
			meta, err := walk(filepath.Join(dir, ".git"), nil)
			if err != nil {
				return nil, err
			}
			for _, m := range meta {
				files = append(files, ".git/"+m)
			}
		}
	}
	out := files[:0]
	for _, f := range files {
		if f = strings.TrimSuffix(f, "/"); f != "" {
			out = append(out, f)
		}
	}
	return out, nil
}

// inNestedRepo says whether a parent directory of rel is a nested repository.
func inNestedRepo(workdir, rel string) bool {
	for d := path.Dir(rel); d != "." && d != "/"; d = path.Dir(d) {
		if isGitLink(workdir, d) {
			return true
		}
	}
	return false
}

// isGitLink says whether rel is a submodule (a directory with its own .git).
func isGitLink(workdir, rel string) bool {
	_, err := os.Lstat(filepath.Join(workdir, filepath.FromSlash(rel), ".git"))
	return err == nil
}

func isDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

// gitFiles asks git for the files under workdir, relative to it, when workdir is in a git
// work tree.
func gitFiles(ctx context.Context, workdir string, includeIgnored bool) ([]string, bool) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, false
	}
	// Inside a work tree (its top level or a subdirectory, whose parents' .gitignore apply).
	if out, err := exec.CommandContext(ctx, git, "-C", workdir, "rev-parse", "--is-inside-work-tree").Output(); err != nil || strings.TrimSpace(string(out)) != "true" {
		return nil, false
	}
	args := []string{"-C", workdir, "ls-files", "-z", "--cached", "--others"}
	if !includeIgnored {
		args = append(args, "--exclude-standard")
	}
	out, err := exec.CommandContext(ctx, git, args...).Output()
	if err != nil {
		return nil, false
	}
	var files []string
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) > 0 {
			files = append(files, string(f))
		}
	}
	return files, true
}

// notIgnoredByGit drops the paths git ignores (with the rules of the whole repository, its
// parents' .gitignore included), and what lies under them.
func notIgnoredByGit(ctx context.Context, workdir string, paths []string) []string {
	if len(paths) == 0 {
		return paths
	}
	cmd := exec.CommandContext(ctx, "git", "-C", workdir, "check-ignore", "-z", "--stdin")
	cmd.Stdin = strings.NewReader(strings.Join(paths, "\x00") + "\x00")
	out, _ := cmd.Output() // exit 1: nothing ignored
	ignored := map[string]bool{}
	for _, p := range bytes.Split(out, []byte{0}) {
		if len(p) > 0 {
			ignored[string(p)] = true
		}
	}
	var keep []string
	for _, p := range paths {
		skip := false
		for d := p; d != "." && d != ""; d = path.Dir(d) {
			if ignored[d] {
				skip = true
				break
			}
		}
		if !skip {
			keep = append(keep, p)
		}
	}
	return keep
}

// walk lists everything under root (relative, slash-separated), not descending into .git or
// what m ignores, not following symlinks.
func walk(root string, m *ignore.Matcher) ([]string, error) {
	var names []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && (rel == ".git" && m != nil) {
			return filepath.SkipDir
		}
		if m.Ignored(rel, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		names = append(names, rel)
		return nil
	})
	return names, err
}

// hostEntry describes a host path as staging records it (mtime in whole seconds, as an archive
// carries it; none for directories and links); ok is false for special files.
func hostEntry(workdir, rel string, fi fs.FileInfo) (tree.Entry, bool) {
	e, err := tree.EntryOf(rel, fi, func() (string, error) {
		return os.Readlink(filepath.Join(workdir, filepath.FromSlash(rel)))
	})
	if err != nil || e.Type == tree.Other {
		return e, false
	}
	e.MTime = fi.ModTime().Truncate(1e9).UnixNano()
	if e.Type != tree.File {
		e.MTime = 0
	}
	return e, true
}

// HashHostFile is the SHA-256 of a host file under workdir ("" if unreadable).
func HashHostFile(workdir, rel string) string {
	f, err := os.Open(filepath.Join(workdir, filepath.FromSlash(rel)))
	if err != nil {
		return ""
	}
	defer f.Close()
	sum, err := tree.HashReader(f)
	if err != nil {
		return ""
	}
	return sum
}
