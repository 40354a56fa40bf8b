package review

import (
	"path"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// The host invariant (docs/threat-model.md) is enforced in two places only: refusePath, which
// every path read from the guest passes before anything is planned for it, and guardFinalState
// (finalstate.go), which checks the tree an apply would leave. hostTree's writers call
// refusePath again, so that no host write can skip it.

// refusePath says why a path read from the guest must never be written on the host ("" if it
// may be): it must be relative and clean, without "..", NUL, or git's machinery at any depth.
func refusePath(p string) string {
	switch {
	case p == "" || p == ".":
		return "empty path"
	case strings.ContainsRune(p, 0):
		return "the path contains a NUL byte"
	case strings.HasPrefix(p, "/"):
		return "absolute path"
	case path.Clean(p) != p:
		return "the path is not clean (it has //, ./ or a trailing /)"
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return "the path climbs out with .."
		}
	}
	if staging.IsGitMetadata(p) {
		return refusedGit
	}
	if isGitmodules(p) {
		return refusedGitmodules
	}
	return ""
}

// Reasons that put an item in Changeset.Ignored rather than among the changes.
const (
	refusedGit        = ".git is never written by a review: the guest's git metadata (config, hooks, a gitdir: link) could run code on the host"
	refusedGitmodules = ".gitmodules is never applied by a review (it can point a submodule at any URL or path): read it with `limactl mcp review --patch` and apply it by hand"
	refusedBareRepo   = "would make a directory git treats as a repository (HEAD, objects/, refs/): never written by a review"
)

// ignoredReason says whether a refusal puts the item among the ignored ones (git's machinery:
// listed, never applied, not a choice to make).
func ignoredReason(why string) bool {
	return why == refusedGit || why == refusedGitmodules
}

// isGitmodules says whether rel is a .gitmodules file (any depth, any case).
func isGitmodules(rel string) bool {
	return strings.EqualFold(strings.TrimRight(path.Base(rel), ". "), ".gitmodules")
}

// repoMarkers are the names that make git take a directory for a repository (its
// is_git_directory: HEAD, objects/ and refs/ together).
var repoMarkers = []string{"HEAD", "objects", "refs"}
