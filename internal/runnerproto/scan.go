package runnerproto

import "github.com/limactl-mcp/limactl-mcp/internal/tree"

// ScanRequest lists the tree under Root (not following symbolic links, never entering .git),
// skipping what Patterns ignore (gitignore lines, see internal/ignore) except the paths in
// Keep, which are listed whenever they exist.
type ScanRequest struct {
	Root     string         `json:"root"`
	Patterns []tree.Pattern `json:"patterns,omitempty"`
	Keep     []tree.Name    `json:"keep,omitempty"`
	// Also are relative paths (files or directories, walked whole) listed apart in
	// ScanResult.Also, even inside .git and whatever the patterns say.
	Also []tree.Name `json:"also,omitempty"`
}

// ScanResult is the listing, sorted by path.
type ScanResult struct {
	// RootMissing says Root does not exist.
	RootMissing bool         `json:"root_missing,omitempty"`
	Entries     []tree.Entry `json:"entries"`
	Also        []tree.Entry `json:"also,omitempty"`
	// Errors lists paths that could not be read.
	Errors []string `json:"errors,omitempty"`
}

// HashRequest asks for the SHA-256 of regular files under Root.
type HashRequest struct {
	Root  string      `json:"root"`
	Paths []tree.Name `json:"paths"`
}

// HashResult has one hex digest per requested path ("" when it is not a readable regular file).
type HashResult struct {
	Hashes []string `json:"hashes"`
}
