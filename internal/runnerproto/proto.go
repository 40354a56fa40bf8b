// Package runnerproto is the wire protocol between the host and the guest runner: a small
// program that limactl-mcp copies into the guest and keeps running on one SSH channel, so that
// each tool call costs one round trip instead of a new SSH session and a new login shell.
//
// Frames are a 4-byte big-endian length followed by that many bytes of JSON. The host sends
// [Request]s; the runner answers each with exactly one [Response] carrying the same ID, in any
// order. Everything the runner sends is untrusted input to the host.
package runnerproto

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/limactl-mcp/limactl-mcp/internal/headtail"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Version changes whenever a message changes incompatibly.
const Version = 1

// Magic is written by the runner before its first frame, so that the host can skip whatever
// the user's login shell printed on stdout before the runner took over.
const Magic = "\x00limactl-mcp-runner\x00"

// MaxFrame bounds one frame, so that a hostile peer cannot make the other side allocate
// without limit.
const MaxFrame = 64 << 20

// Request is one operation for the runner.
type Request struct {
	ID     uint64         `json:"id"`
	Exec   *ExecRequest   `json:"exec,omitempty"`
	Signal *SignalRequest `json:"signal,omitempty"`
	Glob   *GlobRequest   `json:"glob,omitempty"`
	Grep   *GrepRequest   `json:"grep,omitempty"`
	Scan   *ScanRequest   `json:"scan,omitempty"`
	Hash   *HashRequest   `json:"hash,omitempty"`
	List   *ListRequest   `json:"list,omitempty"`
	Read   *ReadRequest   `json:"read,omitempty"`
	// ReadMany reads whole files in one request (readmany.go).
	ReadMany *ReadManyRequest `json:"read_many,omitempty"`
	Write    *WriteRequest    `json:"write,omitempty"`
	Edit     *EditRequest     `json:"edit,omitempty"`

	BgStart  *BgStartRequest  `json:"bg_start,omitempty"`
	BgRead   *BgReadRequest   `json:"bg_read,omitempty"`
	BgList   *BgListRequest   `json:"bg_list,omitempty"`
	BgSignal *BgSignalRequest `json:"bg_signal,omitempty"`
	BgEnd    *BgEndRequest    `json:"bg_end,omitempty"`
	// ShellPorts lists the listening sockets of a `limactl mcp shell` command (shellports.go).
	ShellPorts *ShellPortsRequest `json:"shell_ports,omitempty"`

	CkptCreate   *CkptCreateRequest   `json:"ckpt_create,omitempty"`
	CkptList     *CkptListRequest     `json:"ckpt_list,omitempty"`
	CkptRestore  *CkptRestoreRequest  `json:"ckpt_restore,omitempty"`
	CkptManifest *CkptManifestRequest `json:"ckpt_manifest,omitempty"`
	CkptSeed     *CkptSeedRequest     `json:"ckpt_seed,omitempty"`

	// Attach opens the runner's fast lane to the host (lane.go).
	Attach *AttachRequest `json:"attach,omitempty"`
}

// Response answers the request with the same ID.
type Response struct {
	ID    uint64      `json:"id"`
	Error string      `json:"error,omitempty"`
	Hello *Hello      `json:"hello,omitempty"`
	Exec  *ExecResult `json:"exec,omitempty"`
	Glob  *GlobResult `json:"glob,omitempty"`
	Grep  *GrepResult `json:"grep,omitempty"`
	Scan  *ScanResult `json:"scan,omitempty"`
	Hash  *HashResult `json:"hash,omitempty"`
	List  *ListResult `json:"list,omitempty"`
	Read  *ReadResult `json:"read,omitempty"`
	// ReadMany answers a ReadManyRequest.
	ReadMany *ReadManyResult `json:"read_many,omitempty"`
	Write    *WriteResult    `json:"write,omitempty"`
	Edit     *EditResult     `json:"edit,omitempty"`

	BgStart  *BgStartResult  `json:"bg_start,omitempty"`
	BgRead   *BgReadResult   `json:"bg_read,omitempty"`
	BgList   *BgListResult   `json:"bg_list,omitempty"`
	BgSignal *BgSignalResult `json:"bg_signal,omitempty"`
	BgEnd    *BgEndResult    `json:"bg_end,omitempty"`
	// ShellPorts answers a ShellPortsRequest.
	ShellPorts *ShellPortsResult `json:"shell_ports,omitempty"`

	CkptCreate   *CkptCreateResult   `json:"ckpt_create,omitempty"`
	CkptList     *CkptListResult     `json:"ckpt_list,omitempty"`
	CkptRestore  *CkptRestoreResult  `json:"ckpt_restore,omitempty"`
	CkptManifest *CkptManifestResult `json:"ckpt_manifest,omitempty"`
	CkptSeed     *CkptSeedResult     `json:"ckpt_seed,omitempty"`

	// Attach answers an AttachRequest.
	Attach *AttachResult `json:"attach,omitempty"`
}

// Hello is sent unsolicited (ID 0) when the runner starts.
type Hello struct {
	Version int    `json:"version"`
	PID     int    `json:"pid"`
	UID     int    `json:"uid"`
	Home    string `json:"home"`
	Shell   string `json:"shell"`
	HasGit  bool   `json:"has_git"`
	// LoginEnv says where the commands' login environment comes from when the runner starts:
	// "cached" (remembered from an earlier login shell, still valid), "" (a login shell is
	// running: commands wait for it), "none" (not asked for).
	LoginEnv string `json:"login_env,omitempty"`
}

// ExecRequest runs a command.
type ExecRequest struct {
	// Argv is the command. Leading NAME=value words set environment variables, as they do in
	// `limactl shell INSTANCE NAME=value cmd`.
	Argv []string `json:"argv"`
	// Dir is the working directory.
	Dir string `json:"dir"`
	// TimeoutMillis kills the command's whole process group when it expires (0: none).
	TimeoutMillis int64 `json:"timeout_ms,omitempty"`
	// HeadBytes and TailBytes bound what is returned of each stream: the first HeadBytes and
	// the last TailBytes bytes; what lies between is counted, not sent.
	HeadBytes int `json:"head_bytes"`
	TailBytes int `json:"tail_bytes"`
}

// SignalRequest kills the process group of a running exec (the request with ID Target).
type SignalRequest struct {
	Target uint64 `json:"target"`
}

// ExecResult is how a command ended.
type ExecResult struct {
	Stdout headtail.Output `json:"stdout"`
	Stderr headtail.Output `json:"stderr"`
	// ExitCode is the exit status, or -1 when the command was killed by a signal or did not start.
	ExitCode int `json:"exit_code"`
	// Signal names the signal that killed the command ("SIGKILL"), if any.
	Signal string `json:"signal,omitempty"`
	// TimedOut says the timeout expired and the process group was killed.
	TimedOut bool `json:"timed_out,omitempty"`
	// Canceled says the host asked for the command to be killed.
	Canceled bool `json:"canceled,omitempty"`
	// StartError says why the command could not start (for example, the directory is missing).
	StartError string `json:"start_error,omitempty"`
	// DirMissing says the working directory does not exist.
	DirMissing bool `json:"dir_missing,omitempty"`
	// HeldBy names the processes the command left running that still held its output when
	// it ended ("pid 123 (sleep 100)"): what they wrote after that was not collected.
	HeldBy []string `json:"held_by,omitempty"`
	// DurationMillis is how long the command ran.
	DurationMillis int64 `json:"duration_ms"`
}

// GlobRequest lists the paths under Dir that match Pattern (doublestar syntax: `**` matches
// any number of directories), relative to Dir.
type GlobRequest struct {
	Dir        string `json:"dir"`
	Pattern    string `json:"pattern"`
	MaxMatches int    `json:"max_matches"`
}

// GlobResult lists absolute matching paths, sorted.
type GlobResult struct {
	Matches   []string `json:"matches"`
	Truncated bool     `json:"truncated,omitempty"`
	// DirErrno names why Dir could not be looked at ("ENOENT", "EACCES"), NotDir says it is not
	// a directory (following links); there are no matches then. The runner checks Dir itself,
	// so that the glob tool costs one round trip.
	DirErrno string `json:"dir_errno,omitempty"`
	NotDir   bool   `json:"not_dir,omitempty"`
}

// GrepRequest searches file contents under Dir like `git grep -n --no-index`.
type GrepRequest struct {
	Dir      string `json:"dir"`
	Pattern  string `json:"pattern"`
	Include  string `json:"include,omitempty"`
	MaxBytes int    `json:"max_bytes"`
	// NoGit forces the built-in search even where git exists (for tests).
	NoGit bool `json:"no_git,omitempty"`
}

// GrepResult is `path:line:text` lines with paths relative to Dir.
type GrepResult struct {
	Output    string `json:"output"`
	Truncated bool   `json:"truncated,omitempty"`
	// Engine is "git" or "builtin".
	Engine string `json:"engine"`
	// BadPattern says the pattern is not a valid regular expression (Error has the details).
	BadPattern bool   `json:"bad_pattern,omitempty"`
	Error      string `json:"error,omitempty"`
}

// WriteFrame writes v as one frame.
func WriteFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > MaxFrame {
		return fmt.Errorf("frame of %d bytes exceeds the %d-byte limit", len(b), MaxFrame)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

// ErrFrameTooLarge is returned for a frame that announces more than MaxFrame bytes.
var ErrFrameTooLarge = errors.New("runner protocol: frame too large")

// ReadFrame reads one frame into v.
func ReadFrame(r io.Reader, v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return ErrFrameTooLarge
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("runner protocol: malformed frame: %w", err)
	}
	return nil
}

// ListRequest lists the entries of one directory (not following a link at Dir's end is not
// promised: Dir is opened as a path), at most Max of them, so that a directory of millions of
// entries costs neither side more than Max.
type ListRequest struct {
	Dir string `json:"dir"`
	Max int    `json:"max"`
}

// ListEntry is one directory entry, described without following it.
type ListEntry struct {
	Name   tree.Name `json:"n"`
	Type   tree.Kind `json:"t"`
	Mode   uint32    `json:"m"` // Go's fs.FileMode bits
	Size   int64     `json:"s,omitempty"`
	MTime  int64     `json:"mt,omitempty"` // Unix nanoseconds
	Target tree.Name `json:"l,omitempty"`  // a symlink's target
}

// ListResult is a directory's entries, in the order the directory gave them.
type ListResult struct {
	Entries   []ListEntry `json:"entries"`
	Truncated bool        `json:"truncated,omitempty"`
	// NotDir says Dir is not a directory.
	NotDir bool `json:"not_dir,omitempty"`
	// Errno names why Dir could not be listed ("ENOENT", "EACCES"); there are no entries then.
	Errno string `json:"errno,omitempty"`
}

// ReadRequest reads one regular file, at most Limit bytes from Offset. The runner opens it
// without blocking and without following a link at its end, and refuses what is not a regular
// file, so that a fifo nobody writes or a link to a device cannot stall or flood the host.
// A file larger than one frame is read in several requests, each opening it anew.
type ReadRequest struct {
	// Path is a tree.Name: a guest file's name need not be valid UTF-8 (review reads the
	// files the agent made, whatever their names).
	Path   tree.Name `json:"path"`
	Offset int64     `json:"offset,omitempty"`
	Limit  int64     `json:"limit"`
	// Follow reads the file the path leads to, links anywhere in it followed (the file tools,
	// which act on what a path names as a shell would). What it leads to is looked at before
	// it is opened (only a regular file is opened), still opened without blocking, and checked
	// again with fstat after the open.
	Follow bool `json:"follow,omitempty"`
}

// ReadResult is a file's bytes from the Offset asked for, and its size when opened. Data holds
// at most the Limit asked for; Truncated says the file had more (Data then holds Limit bytes).
type ReadResult struct {
	Data      []byte `json:"data"`
	Size      int64  `json:"size"`
	Truncated bool   `json:"truncated,omitempty"`
	// NotRegular names the type of what is at Path when it is not a regular file ("dir",
	// "symlink", "other"); Data is then empty.
	NotRegular tree.Kind `json:"not_regular,omitempty"`
	// Missing says nothing is at Path.
	Missing bool `json:"missing,omitempty"`
	// Mode is the fs.FileMode bits of what is at Path (of what it leads to, with Follow),
	// set for a regular file and for what NotRegular names, when known.
	Mode uint32 `json:"mode,omitempty"`
	// Errno names why Path could not be read ("EACCES", "ENOTDIR", "ELOOP"); Data is empty.
	Errno string `json:"errno,omitempty"`
}

// WriteRequest replaces a file's content so that nobody ever sees a mix of old and new: the
// data goes into a new file beside it, which is renamed over it. An existing file keeps its
// permission bits; a new one gets Mode (less the umask). A link at the path's end, a file with
// several hard links or owned by another user is written in place instead (replacing it would
// cut the link). What is not a regular file is refused without being opened, so a fifo cannot
// block the runner.
type WriteRequest struct {
	Path string `json:"path"`
	Data []byte `json:"data"`
	Mode uint32 `json:"mode"`
	// MakeParents creates missing parent directories (mode 0755, less the umask).
	MakeParents bool `json:"make_parents,omitempty"`
}

// WriteResult says how a write went.
type WriteResult struct {
	// NotRegular names what is at Path when it is not a regular file (tree.Dir, tree.Other);
	// nothing was written.
	NotRegular tree.Kind `json:"not_regular,omitempty"`
	// InPlace says the file was written in place, not replaced.
	InPlace bool `json:"in_place,omitempty"`
	// Errno names the error that stopped the write ("ENOSPC", "EACCES"), with Error saying
	// it in words; nothing was changed.
	Errno string `json:"errno,omitempty"`
	Error string `json:"error,omitempty"`
}
