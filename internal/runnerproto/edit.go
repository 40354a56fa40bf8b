package runnerproto

import (
	"bytes"

	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// EditRequest replaces text in a guest regular file in one request (the replace tool's
// read-modify-write). The runner reads the file Path leads to (as a ReadRequest with Follow:
// looked at before it is opened, opened without blocking, checked with fstat), refuses what is
// larger than MaxBytes or not text (tree.NotText), counts Old in it, and only when Old occurs
// exactly Count times writes the file with every occurrence replaced by New, as a WriteRequest
// writes Path. The write is guarded by the content's hash: just before it, the file is read
// again, and when that content's SHA-256 differs from the one edited, nothing is written
// (Changed): a process that wrote the file meanwhile is not overwritten with a stale edit.
//
// With Old empty, the file is created (with its missing parent directories, mode 0644 less
// the umask) when nothing is at Path; when something is, Exists is said and nothing changes.
type EditRequest struct {
	Path  string `json:"path"`
	Old   string `json:"old"`
	New   string `json:"new"`
	Count int    `json:"count"`
	// MaxBytes bounds the file: a larger one is not read (TooLarge).
	MaxBytes int64 `json:"max_bytes"`
}

// EditResult says how an edit went. At most one outcome is set, checked in this order:
// Errno, Missing, NotRegular, TooLarge, Binary, Exists, a Found count other than Count,
// Changed, Write's error; otherwise Created or Replaced says what was written.
type EditResult struct {
	// Errno names why the file could not be looked at or read ("EACCES", "ENOTDIR").
	Errno string `json:"errno,omitempty"`
	// Missing says nothing is at Path (and Old was not empty).
	Missing bool `json:"missing,omitempty"`
	// NotRegular names what Path leads to when it is not a regular file (tree.Dir,
	// tree.Other), Mode its fs.FileMode bits.
	NotRegular tree.Kind `json:"not_regular,omitempty"`
	Mode       uint32    `json:"mode,omitempty"`
	// Size is the file's size; TooLarge says it is (or grew) past MaxBytes.
	Size     int64 `json:"size,omitempty"`
	TooLarge bool  `json:"too_large,omitempty"`
	// Binary says the file is not text (tree.NotText).
	Binary bool `json:"binary,omitempty"`
	// Exists says Old was empty but something is at Path.
	Exists bool `json:"exists,omitempty"`
	// Found is how many times Old occurs in the file.
	Found int `json:"found,omitempty"`
	// Changed says the file changed between the read and the write: nothing was written.
	Changed bool `json:"changed,omitempty"`
	// Write is how the write went, when one was made (its Errno or NotRegular: it failed).
	Write *WriteResult `json:"write,omitempty"`
	// Created says the file was created (Old empty); Replaced how many occurrences were
	// replaced (Count) when the file was written.
	Created  bool `json:"created,omitempty"`
	Replaced int  `json:"replaced,omitempty"`
}

// Apply is the edit of content data, the same on both sides (the runner, and the host
// without it): the new content, or nil with what stops the edit in res (Binary, Exists,
// Found). With Old empty, data is what is at Path: Exists.
func (q *EditRequest) Apply(data []byte) (out []byte, res EditResult) {
	if tree.NotText(data) {
		res.Binary = true
		return nil, res
	}
	if q.Old == "" {
		res.Exists = true
		return nil, res
	}
	res.Found = bytes.Count(data, []byte(q.Old))
	if res.Found != q.Count {
		return nil, res
	}
	return bytes.ReplaceAll(data, []byte(q.Old), []byte(q.New)), res
}
