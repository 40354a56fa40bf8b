package background

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/limactl-mcp/limactl-mcp/internal/atomicfile"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// A background process's directory, $HOME/.cache/limactl-mcp/bg/SESSION/OWNER/ID, holds:
//
//	lock      held (flock, exclusive) by the supervisor while it lives
//	info.json the command as asked for, its pid and start (written by the supervisor)
//	out.K     the K-th segment of the output (runnerproto.BgOutput)
//	exit.json how the command ended (written by the supervisor, renamed into place)
//
// Everything in it can be written by the guest user, so the agent: it is read with caps and
// validated, and a directory that does not make sense is reported as such, never trusted.

// BaseDir is where the groups live, under the user's home.
const BaseDir = ".cache/limactl-mcp/bg"

// Caps on what is read back from a process's directory.
const (
	MaxInfo      = 64 << 10 // info.json and exit.json
	maxBgEntries = 4096     // entries read of a directory
	maxBgArgv    = 1024     // words of a command shown
)

var bgName = regexp.MustCompile(runnerproto.BgNamePattern)

// bgGroupDir is the directory of group ("SESSION" or "SESSION/OWNER"), checked.
func bgGroupDir(group string, allowSession bool) (string, error) {
	parts := strings.Split(group, "/")
	if len(parts) > 2 || (len(parts) == 1 && !allowSession) {
		return "", fmt.Errorf("background group %q is not SESSION/OWNER", group)
	}
	for _, p := range parts {
		if !bgName.MatchString(p) {
			return "", fmt.Errorf("background group %q: %q is not a valid name", group, p)
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, BaseDir, filepath.FromSlash(group)), nil
}

// checkBgOutput refuses segment settings that would not bound the output.
func checkBgOutput(o runnerproto.BgOutput) error {
	if o.SegmentBytes < 1 || o.SegmentBytes > 16<<20 || o.HeadSegments < 0 || o.TailSegments < 1 || o.HeadSegments+o.TailSegments > 1024 {
		return fmt.Errorf("background output settings %+v out of range", o)
	}
	return nil
}

// bgInfo is info.json.
type bgInfo struct {
	Argv    []string `json:"argv"`
	Dir     string   `json:"dir"`
	PID     int      `json:"pid"`
	Started int64    `json:"started_ms"`
}

// bgExit is exit.json.
type bgExit struct {
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	Ended    int64  `json:"ended_ms"`
}

// writeJSONFile writes v to path atomically (internal/atomicfile: a new file renamed over it).
func writeJSONFile(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b, 0o644, false)
}

// readJSONFile reads a small regular file the agent may have replaced: without following a
// link, without blocking on a fifo, at most MaxInfo bytes.
func readJSONFile(path string, v any) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxInfo+1))
	if err != nil {
		return err
	}
	if len(b) > MaxInfo {
		return fmt.Errorf("%s is larger than %d bytes", path, MaxInfo)
	}
	return json.Unmarshal(b, v)
}

// supervisorAlive says whether the supervisor of the process in dir still holds its lock.
func supervisorAlive(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}

// validPID is a pid whose process group may be signalled: never 0 or 1 (kill(0) and kill(-1)
// reach far more than one group) and never the runner's own.
func validPID(pid int) bool {
	return pid > 1 && pid < 1<<22 && pid != os.Getpid() && pid != unix.Getpgrp()
}

// GroupAlive says whether process group pid still has a member (and may be signalled).
func GroupAlive(pid int) bool {
	return validPID(pid) && unix.Kill(-pid, 0) != unix.ESRCH
}

// bgRecordIDs lists the numeric process directories of groupDir, sorted (at most
// maxBgEntries entries are looked at).
func bgRecordIDs(groupDir string) ([]int, bool, error) {
	f, err := os.Open(groupDir)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	ents, err := f.ReadDir(maxBgEntries)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	var ids []int
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if id, err := strconv.Atoi(e.Name()); err == nil && id > 0 && strconv.Itoa(id) == e.Name() {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	return ids, len(ents) == maxBgEntries, nil
}

// bgStatusOf reads what is known of the process in dir (id) from its files.
func bgStatusOf(dir string, id int, o runnerproto.BgOutput) (runnerproto.BgStatus, error) {
	st := runnerproto.BgStatus{ID: id}
	var info bgInfo
	if err := readJSONFile(filepath.Join(dir, "info.json"), &info); err != nil {
		return st, fmt.Errorf("background process %d: %w", id, err)
	}
	if !validPID(info.PID) {
		return st, fmt.Errorf("background process %d: pid %d is not valid", id, info.PID)
	}
	if len(info.Argv) > maxBgArgv {
		info.Argv = info.Argv[:maxBgArgv]
	}
	st.Argv, st.Dir, st.PID, st.Started = info.Argv, info.Dir, info.PID, info.Started
	var ex bgExit
	switch err := readJSONFile(filepath.Join(dir, "exit.json"), &ex); {
	case err == nil:
		st.ExitCode, st.Signal, st.Ended = ex.ExitCode, ex.Signal, ex.Ended
	case errors.Is(err, os.ErrNotExist):
		// The supervisor may have written exit.json and released its lock in between.
		if supervisorAlive(dir) {
			st.Running = true
		} else if readJSONFile(filepath.Join(dir, "exit.json"), &ex) == nil {
			st.ExitCode, st.Signal, st.Ended = ex.ExitCode, ex.Signal, ex.Ended
		} else {
			st.Lost = true
		}
	default:
		return st, fmt.Errorf("background process %d: %w", id, err)
	}
	segs, err := listSegments(dir, o)
	if err != nil {
		return st, err
	}
	st.OutputBytes = segs.total
	return st, nil
}

// segments are the output segments of a process that are on disk now.
type segments struct {
	size  int64
	idx   []int64 // the indexes present, ascending
	total int64   // bytes written so far: the last segment's start plus its size
}

// listSegments finds dir's output segments. A fast writer can move on while they are listed:
// when the newest listed tail segment is gone by the time its size is read, every segment
// after it is newer than the listing, so the listing is taken again (up to 64 times) rather
// than counting the total from an older segment, which would put the end of the output
// behind what a reader was already told.
func listSegments(dir string, o runnerproto.BgOutput) (*segments, error) {
	for attempt := 1; ; attempt++ {
		s, moved, err := listSegmentsOnce(dir, o)
		if err != nil || !moved || attempt == 64 {
			return s, err
		}
	}
}

// listSegmentsOnce is one listing; moved says the newest listed tail segment was removed
// meanwhile (the writer moved on).
func listSegmentsOnce(dir string, o runnerproto.BgOutput) (s *segments, moved bool, err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	ents, err := f.ReadDir(maxBgEntries)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	s = &segments{size: int64(o.SegmentBytes)}
	for _, e := range ents {
		n, ok := strings.CutPrefix(e.Name(), "out.")
		if !ok {
			continue
		}
		k, err := strconv.ParseInt(n, 10, 64)
		if err != nil || k < 0 || k > (1<<62)/s.size || strconv.FormatInt(k, 10) != n || !e.Type().IsRegular() {
			continue
		}
		s.idx = append(s.idx, k)
	}
	sort.Slice(s.idx, func(i, j int) bool { return s.idx[i] < s.idx[j] })
	for len(s.idx) > 0 {
		last := s.idx[len(s.idx)-1]
		fi, err := os.Lstat(filepath.Join(dir, segmentName(last)))
		if err != nil {
			s.idx = s.idx[:len(s.idx)-1] // removed meanwhile
			if last >= int64(o.HeadSegments) {
				moved = true
			}
			continue
		}
		s.total = last*s.size + min(fi.Size(), s.size)
		break
	}
	return s, moved, nil
}

func segmentName(k int64) string { return "out." + strconv.FormatInt(k, 10) }

// readOutput reads at most max bytes of dir's output from offset: from the first kept byte
// at or after it (skipped counts the dropped bytes in between), never past what was written.
// A writer fast enough to drop every listed segment before it is read (yes(1) drops a 4 KiB
// segment in microseconds) would leave the read empty in the middle of the output: then the
// segments are listed again (up to 64 times), as a reader expects data where data is kept.
func readOutput(dir string, o runnerproto.BgOutput, offset int64, max int) (data []byte, start, skipped int64, err error) {
	for attempt := 1; ; attempt++ {
		data, start, skipped, vanished, err := readOutputOnce(dir, o, offset, max)
		if err != nil || len(data) > 0 || !vanished || attempt == 64 {
			return data, start, skipped, err
		}
	}
}

// readOutputOnce is one listing and read; vanished says a listed segment was removed before
// it could be read and nothing was read.
func readOutputOnce(dir string, o runnerproto.BgOutput, offset int64, max int) (data []byte, start, skipped int64, vanished bool, err error) {
	segs, err := listSegments(dir, o)
	if err != nil {
		return nil, 0, 0, false, err
	}
	if offset > segs.total {
		offset = segs.total
	}
	start = offset
	buf := make([]byte, 0, min(int64(max), segs.total-offset))
	pos := offset
	for _, k := range segs.idx {
		if len(buf) >= max || pos >= segs.total {
			break
		}
		segStart, segEnd := k*segs.size, (k+1)*segs.size
		if segEnd <= pos {
			continue
		}
		if segStart > pos {
			if len(buf) > 0 {
				break // a gap after data: the next read reports it
			}
			pos = segStart
			start = pos
		}
		n, err := readSegment(filepath.Join(dir, segmentName(k)), pos-segStart, buf[len(buf):min(cap(buf), len(buf)+int(segEnd-pos))])
		if err != nil && len(buf) == 0 {
			// Removed since the listing (the writer moved on): the next kept segment follows.
			vanished = true
			continue
		}
		buf = buf[:len(buf)+n]
		pos += int64(n)
		if pos < segEnd {
			break // the segment being written ends here
		}
	}
	return buf, start, start - offset, vanished && len(buf) == 0, nil
}

// readSegment reads into p from offset off of the segment file at path.
func readSegment(path string, off int64, p []byte) (int, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%s is not a regular file", path)
	}
	n, err := f.ReadAt(p, off)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

// segmentWriter keeps a stream in segments: the first o.HeadSegments and the last
// o.TailSegments (the one being written among them).
type segmentWriter struct {
	dir   string
	o     runnerproto.BgOutput
	total int64
	cur   *os.File
	idx   int64
	// failed says writing to disk failed (a full disk): the rest of the stream is read and
	// dropped, so that the command never blocks on its output.
	failed bool
}

func (w *segmentWriter) Write(p []byte) (int, error) {
	n := len(p)
	size := int64(w.o.SegmentBytes)
	for len(p) > 0 && !w.failed {
		k, off := w.total/size, w.total%size
		if w.cur == nil || k != w.idx {
			if err := w.open(k); err != nil {
				w.failed = true
				break
			}
		}
		m := min(int64(len(p)), size-off)
		if _, err := w.cur.Write(p[:m]); err != nil {
			w.failed = true
			break
		}
		w.total += m
		p = p[m:]
	}
	return n, nil
}

// open starts segment k and removes the one that falls out of the tail.
func (w *segmentWriter) open(k int64) error {
	if w.cur != nil {
		w.cur.Close()
		w.cur = nil
	}
	// The oldest of the tail goes first: the directory never holds more than the segments kept.
	if old := k - int64(w.o.TailSegments); old >= int64(w.o.HeadSegments) {
		_ = os.Remove(filepath.Join(w.dir, segmentName(old)))
	}
	f, err := os.OpenFile(filepath.Join(w.dir, segmentName(k)), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	w.cur, w.idx = f, k
	return nil
}

func (w *segmentWriter) Close() {
	if w.cur != nil {
		w.cur.Close()
	}
}

func nowMillis() int64 { return time.Now().UnixMilli() }
