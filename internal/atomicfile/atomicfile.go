// Package atomicfile is the one way the guest side (the runner's file tool, its checkpoint and
// background stores, its login-environment cache, the network policy's files) puts a file in
// place: a new file beside the target, created with O_EXCL|O_NOFOLLOW (never an existing file,
// never through a link someone planted at its name), written, fsynced, and renamed over the
// target, so that a reader, or a guest that crashes, sees the old content or the new, never a
// mix; on any failure the new file is removed. WriteFileNoSync's file, not fsynced, is swapped
// in instead of renamed (swapInto): a reader still sees old or new, a crash may leave it empty. Through an os.Root (CreateIn), nothing on the
// way leaves the root either.
//
// It is not the host's atomic write (internal/fsutil), and it does not write in place: a
// file that must keep its identity (a link's target, a file with other links) is the
// caller's to write.
//
// It is written here rather than taken from github.com/google/renameio: the runner is embedded
// in the host binary for two architectures and stays small, and its callers need what
// renameio does not give: the target's name decided after the content (a checkpoint's object
// is named by its hash), files staged in a root and renamed together later (a restore), no
// fsync for thousands of files (SkipSync).
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// Pending is a new file, not yet in place. Its methods are not safe for concurrent use.
type Pending struct {
	f        *os.File
	name     string   // the new file's path (in root, when root is set)
	root     *os.Root // nil: name is an ordinary path
	skipSync bool
	swap     bool // put in place by swapInto (WriteFileNoSync)
	closed   bool
	kept     bool // in place, or left for the caller (Close)
}

// tries bounds the names tried when a random name is taken (by chance, or by someone who
// made a file of that name).
const tries = 3

// Create starts a new file in dir, named ".BASE.limactl-mcp-RANDOM" (base is the target's
// name, or any word for a file whose target is not known yet), with perm less the umask, as
// open(2) makes it (Chmod sets an exact mode).
func Create(dir, base string, perm os.FileMode) (*Pending, error) {
	return create(nil, dir, base, perm)
}

// CreateIn is Create in dir of root (a path relative to root): neither the new file nor the
// rename of Replace follows a link out of root.
func CreateIn(root *os.Root, dir, base string, perm os.FileMode) (*Pending, error) {
	return create(root, dir, base, perm)
}

func create(root *os.Root, dir, base string, perm os.FileMode) (*Pending, error) {
	const flags = os.O_WRONLY | os.O_CREATE | os.O_EXCL | syscall.O_NOFOLLOW
	var err error
	for range tries {
		name := filepath.Join(dir, "."+base+".limactl-mcp-"+randomHex())
		var f *os.File
		if root != nil {
			f, err = root.OpenFile(name, flags, perm)
		} else {
			f, err = os.OpenFile(name, flags, perm)
		}
		if err == nil {
			return &Pending{f: f, name: name, root: root}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
	return nil, err
}

func randomHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Name is the new file's path (relative to the root, for CreateIn).
func (p *Pending) Name() string { return p.name }

// Write writes to the new file.
func (p *Pending) Write(b []byte) (int, error) { return p.f.Write(b) }

// Chmod gives the new file exactly mode (setuid, setgid and sticky included), whatever the
// umask.
func (p *Pending) Chmod(mode os.FileMode) error { return p.f.Chmod(mode) }

// SkipSync leaves out the new file's fsync: for a caller that writes thousands (a
// checkpoint's objects, whose loss in a crash its restore detects), or a file whose loss costs
// nothing (a cache) and that a reader waits for.
func (p *Pending) SkipSync() { p.skipSync = true }

// Close makes the new file durable and closes it, leaving it at Name for the caller to rename
// (files staged to be put in place together). Discard still removes it.
func (p *Pending) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	var err error
	if !p.skipSync {
		err = p.f.Sync()
	}
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Replace makes the new file durable and renames it over target (a path in the same
// directory, or of the same root): it is the target now. On an error the new file is
// removed.
func (p *Pending) Replace(target string) error {
	if err := p.Close(); err != nil {
		p.Discard()
		return err
	}
	var err error
	switch {
	case p.root != nil:
		err = p.root.Rename(p.name, target)
	case p.swap:
		err = p.swapInto(target)
	default:
		err = os.Rename(p.name, target)
	}
	if err != nil {
		p.Discard()
		return err
	}
	p.kept = true
	return nil
}

// swapInto is the rename of a file not made durable: the new file and what is at target
// swap names (renameat2 RENAME_EXCHANGE), then the old file is removed from the new one's
// former name. The end is the rename's, and a reader of target still sees the old content or
// the new. It saves the guest about a millisecond of a 1 KiB write (4.2 against 3.2 ms p50 on
// the test VM, docs/benchmarks.md): when a plain rename replaces a file, ext4 (Lima's guest
// filesystem) starts writing out the new file's data at once (auto_da_alloc, which keeps an
// unsynced new content across a crash); a swap does not. So a crash of the machine soon after
// may leave target empty rather than old or new: acceptable only where the write's loss in a
// crash already is (WriteFileNoSync). Not for files that are mostly new (a checkpoint's
// objects): there the swap finds nothing and costs a call before the rename.
//
// Where there is nothing at target, or the filesystem cannot swap, it is the plain rename. A
// directory at target (put there since the caller looked) is swapped back and the error is
// the rename's (EISDIR): a directory is never removed. Should the names change again
// meanwhile (someone racing the write), what is left at the new file's name is kept and the
// error names it.
func (p *Pending) swapInto(target string) error {
	if err := unix.Renameat2(unix.AT_FDCWD, p.name, unix.AT_FDCWD, target, unix.RENAME_EXCHANGE); err != nil {
		return os.Rename(p.name, target)
	}
	// p.name is now what was at target: removed as the rename would have replaced it.
	err := unix.Unlinkat(unix.AT_FDCWD, p.name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	p.kept = true // from here p.name may hold what is not ours: never Discard's to remove
	if serr := unix.Renameat2(unix.AT_FDCWD, p.name, unix.AT_FDCWD, target, unix.RENAME_EXCHANGE); serr != nil {
		return &os.LinkError{Op: "rename", Old: p.name, New: target, Err: fmt.Errorf("%w; what was at the target is left at %s", err, p.name)}
	}
	// p.name is the new file again, unless target changed meanwhile.
	if uerr := unix.Unlinkat(unix.AT_FDCWD, p.name, 0); uerr != nil && !errors.Is(uerr, unix.ENOENT) {
		return &os.LinkError{Op: "rename", Old: p.name, New: target, Err: fmt.Errorf("%w; what was put at the target meanwhile is left at %s", err, p.name)}
	}
	if errors.Is(err, unix.EPERM) {
		err = unix.EISDIR // unlink(2)'s word for a directory on some systems; rename(2) says EISDIR
	}
	return &os.LinkError{Op: "rename", Old: p.name, New: target, Err: err}
}

// Discard closes and removes the new file, unless Replace put it in place. It may be
// deferred.
func (p *Pending) Discard() {
	if p.kept {
		return
	}
	p.kept = true
	if !p.closed {
		p.closed = true
		p.f.Close()
	}
	if p.root != nil {
		_ = p.root.Remove(p.name)
	} else {
		_ = os.Remove(p.name)
	}
}

// WriteFile replaces path with data. The new file has perm less the umask, or exactly perm
// (setuid, setgid and sticky included) with exact.
func WriteFile(path string, data []byte, perm os.FileMode, exact bool) error {
	return writeFile(path, data, perm, exact, true)
}

// WriteFileNoSync is WriteFile without the new file's fsync: a reader, or a writer killed in
// the middle, still sees the old content or the new (a swap of names, swapInto), but a crash
// of the machine may lose the write, and leave the file empty. For the agent's own writes in the VM (the write tool): an fsync costs
// 7 ms of a 1 KiB write on the test VM (8.3 against 1.3 ms p50), more than the rest of the
// write, and Lima's SFTP write makes none either.
func WriteFileNoSync(path string, data []byte, perm os.FileMode, exact bool) error {
	return writeFile(path, data, perm, exact, false)
}

func writeFile(path string, data []byte, perm os.FileMode, exact, sync bool) error {
	createPerm := perm
	if exact {
		createPerm = 0o600 // until the Chmod below
	}
	p, err := Create(filepath.Dir(path), filepath.Base(path), createPerm&os.ModePerm)
	if err != nil {
		return err
	}
	defer p.Discard()
	if !sync {
		p.SkipSync()
		p.swap = true
	}
	if _, err := p.Write(data); err != nil {
		return err
	}
	if exact {
		if err := p.Chmod(perm); err != nil {
			return err
		}
	}
	return p.Replace(path)
}

// ModeOf is the os.FileMode of st_mode permission bits (setuid, setgid and sticky included),
// for Chmod.
func ModeOf(bits uint32) os.FileMode {
	mode := os.FileMode(bits & 0o777)
	if bits&syscall.S_ISUID != 0 {
		mode |= os.ModeSetuid
	}
	if bits&syscall.S_ISGID != 0 {
		mode |= os.ModeSetgid
	}
	if bits&syscall.S_ISVTX != 0 {
		mode |= os.ModeSticky
	}
	return mode
}
