package background

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// A process's directory is the agent's to write: a link it planted at the name of the file
// the supervisor writes next (once ".tmp-PID", the supervisor's pid) is never written through;
// the record is the supervisor's and the link's target stays as it was.
func TestRecordNeverWrittenThroughAPlantedLink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "exit.json")
	if err := os.Symlink(victim, fmt.Sprintf("%s.tmp-%d", p, os.Getpid())); err != nil {
		t.Fatal(err)
	}
	if err := writeJSONFile(p, bgExit{ExitCode: 3, Ended: 1}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "untouched" {
		t.Fatalf("the record was written through the planted link: %q", b)
	}
	var ex bgExit
	if err := readJSONFile(p, &ex); err != nil || ex.ExitCode != 3 {
		t.Fatalf("the record: %+v %v", ex, err)
	}
}

// A reader racing a fast writer never sees the end of the output move back: listSegments
// counts the total from the newest segment present, and when the newest it listed is removed
// meanwhile (the writer moved on), it lists again rather than counting from a head segment.
// (TestBackgroundEndlessOutputStaysBounded saw the end at 8,192 after 12 MB on a loaded machine.)
func TestSegmentsEndNeverMovesBack(t *testing.T) {
	dir := t.TempDir()
	o := runnerproto.BgOutput{SegmentBytes: 64, HeadSegments: 2, TailSegments: 3}
	stopWriter := fastWriter(dir, o)
	var seen int64
	back := 0
	deadline := time.Now().Add(2 * time.Second)
	for n := 0; time.Now().Before(deadline); n++ {
		s, err := listSegments(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		if s.total < seen {
			back++
			if back <= 3 {
				t.Errorf("listing %d: the end moved back from %d to %d", n, seen, s.total)
			}
		}
		seen = max(seen, s.total)
	}
	stopWriter()
	if back > 0 {
		t.Errorf("the end moved back %d times", back)
	}
	t.Logf("end seen at %d", seen)
}

// A read in the dropped middle of a fast writer's output always returns data from the first
// kept byte: when every segment it listed is removed before it is read (the writer moved on
// by three segments meanwhile), it lists again rather than answer nothing. (CI saw "a read in
// the dropped middle: offset 3477504, skipped 3465216, 0 bytes" under yes(1) on a loaded
// machine.)
func TestMiddleReadNeverEmpty(t *testing.T) {
	dir := t.TempDir()
	o := runnerproto.BgOutput{SegmentBytes: 64, HeadSegments: 2, TailSegments: 3}
	stopWriter := fastWriter(dir, o)
	defer stopWriter()
	// Past the head and the first tail, so the middle is dropped from the first read on.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if s, err := listSegments(dir, o); err == nil && s.total > 64*64 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer wrote nothing in 10 s")
		}
	}
	empty, reads := 0, 0
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); reads++ {
		data, start, skipped, err := readOutput(dir, o, 3*64, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			empty++
			if empty <= 3 {
				t.Errorf("read %d: nothing at offset %d (skipped %d)", reads, start, skipped)
			}
		} else if skipped == 0 || start != 3*64+skipped {
			t.Errorf("read %d: %d bytes at offset %d, skipped %d", reads, len(data), start, skipped)
		}
	}
	if empty > 0 {
		t.Errorf("%d of %d reads in the middle were empty", empty, reads)
	}
	t.Logf("%d reads in the middle", reads)
}

// fastWriter writes lines into dir's segments as fast as it can until the returned stop is
// called (which waits for it to end).
func fastWriter(dir string, o runnerproto.BgOutput) (stop func()) {
	w := &segmentWriter{dir: dir, o: o}
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		line := []byte("0123456789abcdef0123456789\n")
		for {
			select {
			case <-quit:
				w.Close()
				return
			default:
				_, _ = w.Write(line)
			}
		}
	}()
	return func() { close(quit); <-done }
}
