package staging

import "strings"

// IsGitMetadata says whether any component of rel names a .git directory or file: git's own
// machinery, of the top-level repository or of a nested one (a submodule, a clone inside the
// project). It is the one rule for "this is git's", used by staging (never part of a change)
// and by review (never written on the host). Like git's verify_path it matches in any case
// and in the forms macOS (HFS+ drops some code points from names) and Windows (trailing dots
// and spaces, the 8.3 short name GIT~1) would open as .git.
func IsGitMetadata(rel string) bool {
	for _, c := range strings.Split(rel, "/") {
		if IsDotGit(c) {
			return true
		}
	}
	return false
}

// IsDotGit says whether one name component is .git in any of the forms IsGitMetadata names.
func IsDotGit(c string) bool {
	c = strings.Map(func(r rune) rune {
		if hfsIgnorable(r) {
			return -1
		}
		return r
	}, c)
	c = strings.TrimRight(strings.ToLower(c), ". ")
	return c == ".git" || c == "git~1"
}

// hfsIgnorable are the code points HFS+ drops when it compares names (git's is_hfs_dotgit).
func hfsIgnorable(r rune) bool {
	return r >= 0x200c && r <= 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x206a && r <= 0x206f || r == 0xfeff
}

// gitMetadataRoot is the part of a git metadata path reported for it: config and hooks one by
// one (they can make the host run code), anything else of a .git as the .git itself (a clone
// the agent made has thousands of object files).
func gitMetadataRoot(rel string) string {
	parts := strings.Split(rel, "/")
	for i, c := range parts {
		if !IsDotGit(c) {
			continue
		}
		if i+1 < len(parts) && (parts[i+1] == "config" || parts[i+1] == "hooks") {
			return strings.Join(parts[:min(i+3, len(parts))], "/")
		}
		return strings.Join(parts[:i+1], "/")
	}
	return rel
}
