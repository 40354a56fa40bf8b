package runnerproto

// ScanRequest lists the tree under Root (not following symbolic links, never entering .git),
// skipping what Patterns ignore (gitignore lines, see internal/ignore) except the paths in
// Keep, which are listed whenever they exist.
type ScanRequest struct {
	Root     string    `json:"root"`
	Patterns []Pattern `json:"patterns,omitempty"`
	Keep     []Name    `json:"keep,omitempty"`
	// Also are relative paths (files or directories, walked whole) listed apart in
	// ScanResult.Also, even inside .git and whatever the patterns say.
	Also []Name `json:"also,omitempty"`
}

// Pattern is a gitignore line and the relative directory it applies from.
type Pattern struct {
	Line string `json:"line"`
	Dir  string `json:"dir,omitempty"`
}

// Entry types.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeOther   = "other" // fifo, socket, device
)

// ScanEntry is one path under the root.
type ScanEntry struct {
	Path Name   `json:"p"`
	Type string `json:"t"`
	// Mode is the permission bits plus setuid, setgid and sticky (as in stat's st_mode & 07777).
	Mode   uint32 `json:"m"`
	Size   int64  `json:"s,omitempty"`
	MTime  int64  `json:"mt,omitempty"` // Unix nanoseconds
	Target Name   `json:"l,omitempty"`  // symlink target
}

// ScanResult is the listing, sorted by path.
type ScanResult struct {
	// RootMissing says Root does not exist.
	RootMissing bool        `json:"root_missing,omitempty"`
	Entries     []ScanEntry `json:"entries"`
	Also        []ScanEntry `json:"also,omitempty"`
	// Errors lists paths that could not be read.
	Errors []string `json:"errors,omitempty"`
}

// HashRequest asks for the SHA-256 of regular files under Root.
type HashRequest struct {
	Root  string `json:"root"`
	Paths []Name `json:"paths"`
}

// HashResult has one hex digest per requested path ("" when it is not a readable regular file).
type HashResult struct {
	Hashes []string `json:"hashes"`
}
