// Package ignore decides which paths of a project stay on the host, with .gitignore
// semantics (go-git's implementation): the project's .gitignore files, .git/info/exclude, the
// project ignore file (.limactl-mcp-ignore) and --exclude patterns. The same patterns are sent
// to the guest runner, so that both sides skip the same paths.
package ignore

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// ProjectFile is the project's own ignore file, in gitignore syntax, at the workdir's root.
const ProjectFile = ".limactl-mcp-ignore"

// Matcher matches relative slash-separated paths.
type Matcher struct {
	m     gitignore.Matcher
	empty bool
}

// New compiles patterns.
func New(patterns []tree.Pattern) *Matcher {
	ps := make([]gitignore.Pattern, 0, len(patterns))
	for _, p := range patterns {
		line := strings.TrimRight(p.Line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var domain []string
		if p.Dir != "" {
			domain = strings.Split(p.Dir, "/")
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return &Matcher{m: gitignore.NewMatcher(ps), empty: len(ps) == 0}
}

// Ignored says whether rel (relative to the root, slash-separated) is ignored.
func (m *Matcher) Ignored(rel string, isDir bool) bool {
	if m == nil || m.empty || rel == "" || rel == "." {
		return false
	}
	return m.m.Match(strings.Split(rel, "/"), isDir)
}

// Lines parses gitignore text into patterns for the directory dir.
func Lines(data []byte, dir string) []tree.Pattern {
	var ps []tree.Pattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		ps = append(ps, tree.Pattern{Line: sc.Text(), Dir: dir})
	}
	return ps
}

// Options say which patterns apply besides the project's .gitignore files.
type Options struct {
	// Excludes are extra patterns (--exclude), relative to the root.
	Excludes []string
	// NoGitignore drops .gitignore files and .git/info/exclude (--include-ignored); the
	// project ignore file and Excludes still apply.
	NoGitignore bool
}

// Collect gathers the patterns of the tree at root: .git/info/exclude, every .gitignore (not
// descending into ignored directories or .git), the project ignore file and opts.Excludes.
func Collect(root string, opts Options) ([]tree.Pattern, error) {
	var ps []tree.Pattern
	if data, err := os.ReadFile(filepath.Join(root, ProjectFile)); err == nil {
		ps = append(ps, Lines(data, "")...)
	}
	for _, e := range opts.Excludes {
		ps = append(ps, tree.Pattern{Line: e})
	}
	if opts.NoGitignore {
		return ps, nil
	}
	if data, err := os.ReadFile(filepath.Join(root, ".git", "info", "exclude")); err == nil {
		ps = append(ps, Lines(data, "")...)
	}
	var gitignores []tree.Pattern
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: the selection reports it
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if d.Name() == ".git" || (rel != "." && New(append(ps, gitignores...)).Ignored(rel, true)) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == ".gitignore" && d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err == nil {
				dir := path.Dir(rel)
				if dir == "." {
					dir = ""
				}
				gitignores = append(gitignores, Lines(data, dir)...)
			}
		}
		return nil
	})
	return append(ps, gitignores...), err
}
