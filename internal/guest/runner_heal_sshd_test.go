package guest

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerbin"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

// syncBuffer is a bytes.Buffer safe for the logger's writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A root-owned runner of the right size that is not the runner (in open mode the agent has
// sudo; a crash during an install can leave one too) passes the lstat check and fails to say
// hello: the start verifies the file in full, puts the embedded runner back (here, without
// sudo, the user's copy) and starts it again, once, before any fallback; the person is told
// in one line; and what needs the runner works.
func TestRunnerHealsAReplacedRootRunner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test makes root-owned files: run it as root (CI does)")
	}
	bin, id, err := runnerbin.Binary(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string]func() []byte{
		"zeros": func() []byte { return make([]byte, len(bin)) },
		"a script that exits at once": func() []byte {
			b := []byte("#!/bin/sh\nexit 0\n")
			return append(b, bytes.Repeat([]byte("#"), len(bin)-len(b))...)
		},
		"a script that prints something else": func() []byte {
			b := []byte("#!/bin/sh\necho not the runner; exit 3\n")
			return append(b, bytes.Repeat([]byte("#"), len(bin)-len(b))...)
		},
	}
	for name, content := range shapes {
		t.Run(name, func(t *testing.T) {
			// A root-owned directory, 0755 all the way up, stands in for /usr/local/libexec.
			base, err := os.MkdirTemp("/var/lib", "limactl-mcp-heal-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(base) })
			must(t, os.Chmod(base, 0o755))
			old := systemRunnerDir
			systemRunnerDir = filepath.Join(base, "libexec")
			t.Cleanup(func() { systemRunnerDir = old })
			must(t, os.Mkdir(systemRunnerDir, 0o755))
			fake := filepath.Join(systemRunnerDir, "runner-"+id)
			must(t, os.WriteFile(fake, content(), 0o755))
			must(t, os.Chmod(fake, 0o755))

			srv, _, l := sshdLink(t)
			if ok, err := rootOwned(context.Background(), l, fake, int64(len(bin))); err != nil || !ok {
				t.Fatalf("the replaced runner does not pass the lstat check (%v, %v): the test tests nothing", ok, err)
			}
			var logged syncBuffer
			c := New(func(context.Context) (*sshlink.Target, error) { return target(srv), nil }, Options{NoLoginShell: true, Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))})
			t.Cleanup(func() { c.Close() })
			// A call only the runner answers.
			if _, err := c.CkptList(context.Background(), "heal-test"); err != nil {
				t.Fatalf("the next call failed: %v\nlog:\n%s", err, logged.String())
			}
			lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], "did not start as expected") || !strings.Contains(lines[0], "starting it again") {
				t.Errorf("the person was not told in one line what happened:\n%s", logged.String())
			}
		})
	}
}

// A runner that never answers holds a bounded step (the automatic checkpoint, discard's ending
// of background processes) only for the bound Within sets: the step ends with a WaitError
// that names it, the connection is dropped, and the next call starts a runner anew.
func TestWithinBoundsASilentRunner(t *testing.T) {
	srv := sshd.Start(t)
	limits := runnerproto.CkptLimits{MaxEntries: 10, MaxStoreBytes: 1 << 20, MaxAuto: 1, MaxLabelled: 1}
	steps := map[string]func(c *Conn, ctx context.Context) error{
		"the automatic checkpoint": func(c *Conn, ctx context.Context) error {
			_, err := c.CkptCreate(ctx, runnerproto.CkptCreateRequest{Tree: runnerproto.CkptTree{Session: "s1", Root: "/nonexistent"}, Auto: true, Limits: limits})
			return err
		},
		"ending the background processes": func(c *Conn, ctx context.Context) error {
			_, err := c.BgEnd(ctx, runnerproto.BgEndRequest{Group: "s1"})
			return err
		},
		"counting the pending changes": func(c *Conn, ctx context.Context) error {
			_, err := c.Scan(ctx, runnerproto.ScanRequest{Root: "/nonexistent"})
			return err
		},
	}
	for what, f := range steps {
		c, l := withFakeRunner(t, srv, "silent")
		bounded(t, time.Minute, func() {
			err := c.Within(context.Background(), 3*time.Second, what, func(ctx context.Context) error { return f(c, ctx) })
			var werr *WaitError
			if !errors.As(err, &werr) || !strings.Contains(err.Error(), what) || !strings.Contains(err.Error(), "did not answer within 3s") {
				t.Errorf("%s with a silent runner: %v", what, err)
			}
		})
		c.mu.Lock()
		cur := c.cur
		c.mu.Unlock()
		if cur == l {
			t.Errorf("%s: the link of the silent runner is still in use", what)
		}
	}
}

// A runner that answers nothing is found out by Within's liveness checks long before the
// step's bound (here 10 minutes: a first checkpoint of a large tree needs room); a runner that
// answers them keeps a long step going.
func TestWithinFindsASilentRunnerEarly(t *testing.T) {
	defer func(e, w time.Duration) { pingEvery, pingWait = e, w }(pingEvery, pingWait)
	pingEvery, pingWait = time.Second, 2*time.Second
	srv := sshd.Start(t)
	c, _ := withFakeRunner(t, srv, "silent")
	bounded(t, time.Minute, func() {
		err := c.Within(context.Background(), 10*time.Minute, "the automatic checkpoint", func(ctx context.Context) error {
			_, err := c.CkptCreate(ctx, runnerproto.CkptCreateRequest{Tree: runnerproto.CkptTree{Session: "s1", Root: "/nonexistent"}, Auto: true, Limits: runnerproto.CkptLimits{MaxEntries: 10, MaxStoreBytes: 1 << 20, MaxAuto: 1, MaxLabelled: 1}})
			return err
		})
		var werr *WaitError
		if !errors.As(err, &werr) || !werr.Silent || !strings.Contains(err.Error(), "the automatic checkpoint: the guest runner stopped answering") {
			t.Errorf("a silent runner: %v", err)
		}
	})

	live := New(func(context.Context) (*sshlink.Target, error) { return target(srv), nil }, Options{NoLoginShell: true, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { live.Close() })
	if _, err := live.CkptList(context.Background(), "within-test"); err != nil {
		t.Fatal(err)
	}
	err := live.Within(context.Background(), time.Minute, "a long step", func(ctx context.Context) error {
		select {
		case <-time.After(5 * time.Second): // several liveness checks
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if err != nil {
		t.Errorf("a long step with a live runner: %v", err)
	}
}
