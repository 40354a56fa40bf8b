// Package tree holds the words every layer uses for a directory tree — a Name, a Kind, an
// Entry and an ignore Pattern — so that the runner, its wire protocol, staging's manifests and
// review all speak them without importing each other (as Lima's limatype does for instances),
// and the one rule that says whether a path is inside another (Inside, Within, Below, WithinAny).
// It prints nothing for a person and escapes nothing (the guest runner links it, and no
// terminal code): how an entry is told in words is udiff.Describe's.
package tree

import (
	"fmt"
	"io/fs"
	"syscall"
)

// Kind is what an entry is.
type Kind string

// The kinds of entries. Other is a fifo, socket or device: never staged, never applied.
const (
	File    Kind = "file"
	Dir     Kind = "dir"
	Symlink Kind = "symlink"
	Other   Kind = "other"
)

// Entry describes one path of a tree, relative to its root. The JSON keys are short because
// manifests of large trees are stored and sent whole; they are part of the state on disk.
type Entry struct {
	Path Name `json:"p"`
	Type Kind `json:"t"`
	// Mode is the permission bits plus setuid, setgid and sticky (st_mode & 07777).
	Mode uint32 `json:"m"`
	Size int64  `json:"s,omitempty"`
	// Hash is the SHA-256 of a file's content, where it is known.
	Hash   string `json:"h,omitempty"`
	Target Name   `json:"l,omitempty"` // a symlink's target
	// MTime is the modification time in Unix nanoseconds, where it is kept.
	MTime int64 `json:"mt,omitempty"`
}

// ModeString is a mode as chmod takes it ("755", "4755").
func ModeString(mode uint32) string { return fmt.Sprintf("%o", mode&0o7777) }

// Pattern is one gitignore line and the directory (relative, slash-separated, "" for the
// root) of the file it came from.
type Pattern struct {
	Line string `json:"line"`
	Dir  string `json:"dir,omitempty"`
}

// EntryOf describes rel from its lstat fi, reading a symbolic link's target with readlink
// (whose error it returns). It is the one place a FileInfo becomes an Entry, on either side.
func EntryOf(rel string, fi fs.FileInfo, readlink func() (string, error)) (Entry, error) {
	e := Entry{Path: Name(rel), Mode: uint32(fi.Mode().Perm()), MTime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		e.Mode = uint32(st.Mode) & 0o7777
	}
	switch {
	case fi.Mode().IsRegular():
		e.Type, e.Size = File, fi.Size()
	case fi.IsDir():
		e.Type = Dir
	case fi.Mode()&fs.ModeSymlink != 0:
		e.Type = Symlink
		t, err := readlink()
		if err != nil {
			return e, err
		}
		e.Target = Name(t)
	default:
		e.Type = Other
	}
	return e, nil
}
