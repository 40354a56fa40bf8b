package guest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerbin"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// These tests play a runner the agent replaced (testdata/fakerunner) against the real client
// code over a real sshd: whatever it sends, each call ends with a clear error, never a panic
// or a hang.

var (
	fakeOnce sync.Once
	fakeBin  string
	fakeErr  error
)

func buildFake(t *testing.T) string {
	t.Helper()
	fakeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fakerunner-")
		if err != nil {
			fakeErr = err
			return
		}
		fakeBin = filepath.Join(dir, "fakerunner")
		out, err := exec.Command("go", "build", "-o", fakeBin, "./testdata/fakerunner").CombinedOutput()
		if err != nil {
			fakeErr = fmt.Errorf("%v\n%s", err, out)
		}
		_ = os.Chmod(dir, 0o755)
	})
	if fakeErr != nil {
		t.Fatal(fakeErr)
	}
	return fakeBin
}

func target(srv *sshd.Server) *sshlink.Target {
	return &sshlink.Target{Name: "sshd-test", Addr: srv.Addr, User: srv.User, Signers: []ssh.Signer{srv.ClientSigner},
		HostKeyCallback: ssh.FixedHostKey(srv.HostKey), Arch: runtime.GOARCH}
}

// withFakeRunner returns a Conn whose link runs the fake runner in mode (instead of the
// verified one), and the link.
func withFakeRunner(t *testing.T, srv *sshd.Server, mode string) (*Conn, *link) {
	t.Helper()
	bin := buildFake(t)
	c := New(func(context.Context) (*sshlink.Target, error) { return target(srv), nil }, Options{NoRunner: true, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { c.Close() })
	l, err := c.get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Started the way the real runner is (`EXE serve`), through a wrapper that passes the mode.
	wrapper := fmt.Sprintf("%s/.fakerunner-%d.sh", srv.Home, time.Now().UnixNano())
	srv.Run(t, "sh", "-c", fmt.Sprintf("printf '#!/bin/sh\nexec %s %s\n' > %s && chmod 755 %s", bin, mode, wrapper, wrapper))
	t.Cleanup(func() { _ = os.Remove(wrapper) })
	r, err := launchRunner(context.Background(), l, c.log, wrapper, false)
	if err != nil {
		t.Fatalf("starting the fake runner: %v", err)
	}
	l.ops = runnerBackend{r}
	return c, l
}

func bounded(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("no answer within %s: a hostile runner hangs the host", d)
	}
}

func TestHostileRunnerReplies(t *testing.T) {
	srv := sshd.Start(t)
	for _, mode := range []string{"empty", "hash-count", "garbage", "oversize"} {
		t.Run(mode, func(t *testing.T) {
			c, _ := withFakeRunner(t, srv, mode)
			bounded(t, time.Minute, func() {
				_, err := c.Hash(context.Background(), "/", []tree.Name{"a", "b"})
				if err == nil {
					t.Error("Hash: no error from a malformed reply")
				}
				t.Logf("Hash: %v", err)
			})
			if mode == "empty" || mode == "hash-count" {
				// The same link, another call (the runner was stopped: the next call says so).
				_, err := c.Scan(context.Background(), runnerproto.ScanRequest{Root: "/"})
				if err == nil {
					t.Error("Scan after a malformed reply: no error")
				}
			}
		})
	}
}

// A runner file the agent replaced (same size, other content) is put back before it starts.
func TestReplacedRunnerIsRestored(t *testing.T) {
	srv := sshd.Start(t)
	c := New(func(context.Context) (*sshlink.Target, error) { return target(srv), nil }, Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { c.Close() })
	if _, err := c.Hash(context.Background(), "/", []tree.Name{"etc/hostname"}); err != nil {
		t.Fatal(err)
	}
	bin, id, err := runnerbin.Binary(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	exe := path.Join(srv.Home, runnerDir, "runner-"+id)
	// Same size, same mode, one byte different: a size check would take it.
	srv.Run(t, "sh", "-c", fmt.Sprintf("cp %s %s.evil && printf 'X' | dd of=%s.evil bs=1 seek=100 conv=notrunc 2>/dev/null && chmod 755 %s.evil", exe, exe, exe, exe))
	l, _ := c.get(context.Background())
	start := time.Now()
	ok, err := runnerIntact(context.Background(), l, exe+".evil", bin)
	t.Logf("verifying the runner (%d bytes) took %s", len(bin), time.Since(start).Round(time.Millisecond))
	if err != nil || ok {
		t.Fatalf("a changed runner passed the check: %v %v", ok, err)
	}
	if ok, err := runnerIntact(context.Background(), l, exe, bin); err != nil || !ok {
		t.Fatalf("the real runner failed the check: %v %v", ok, err)
	}
	// Only this connection's runner is stopped (tests of other packages share the user).
	r, err := l.ops.runner()
	if err != nil {
		t.Fatal(err)
	}
	srv.Run(t, "sh", "-c", fmt.Sprintf("mv %s.evil %s && kill %d", exe, exe, r.Hello().PID))
	// The next call reconnects, finds the runner changed, and copies the real one back.
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := c.Hash(context.Background(), "/", []tree.Name{"etc/hostname"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	if out := srv.Run(t, "sh", "-c", "cmp "+exe+" - >/dev/null && echo same || echo differs"); strings.TrimSpace(out) == "" {
		t.Log(out)
	}
	data, err := os.ReadFile(exe)
	if err != nil || string(data) != string(bin) {
		t.Fatalf("the runner in the guest is not the embedded one after restart (%v)", err)
	}
}

// A login script that prints without end: Stream stops at its cap with an error.
func TestStreamCapsFlood(t *testing.T) {
	srv := sshd.Start(t)
	marker := fmt.Sprintf("limactl-mcp-flood-%d", time.Now().UnixNano())
	line := `case "$BASH_EXECUTION_STRING" in *limactl-mcp-flood-*) exec yes;; esac`
	srv.Run(t, "sh", "-c", `grep -q 'limactl-mcp-flood-' "$HOME/.bashrc" 2>/dev/null || { printf '%s\n' '`+line+`' | cat - "$HOME/.bashrc" 2>/dev/null > "$HOME/.bashrc.new"; mv "$HOME/.bashrc.new" "$HOME/.bashrc"; }`)
	c := New(func(context.Context) (*sshlink.Target, error) { return target(srv), nil }, Options{NoRunner: true, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { c.Close() })
	var err error
	bounded(t, 2*time.Minute, func() {
		_, err = c.Stream(context.Background(), "true # "+marker, nil)
	})
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("flood: %v", err)
	}
	if _, err := c.Stream(context.Background(), "true", nil); err != nil && !errors.Is(err, ErrClosed) {
		t.Errorf("an ordinary script after the flood: %v", err)
	}
}

// ReadFile's reply is checked like every other: missing content, more bytes than asked, a
// negative size, a type outside the protocol are errors, never a panic or a hang.
func TestHostileRunnerReadFile(t *testing.T) {
	srv := sshd.Start(t)
	modes := []string{"empty", "garbage", "oversize", "silent"}
	for seed := 1; seed <= 20; seed++ {
		modes = append(modes, fmt.Sprintf("random:%d", seed))
	}
	for _, mode := range modes {
		c, _ := withFakeRunner(t, srv, mode)
		bounded(t, time.Minute, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			data, err := c.ReadFile(ctx, "/etc/hostname", 4)
			if err == nil && len(data) > 4 {
				t.Errorf("%s: %d bytes for a 4-byte limit, no error", mode, len(data))
			}
			if strings.HasPrefix(mode, "random") {
				return
			}
			if err == nil {
				t.Errorf("%s: no error", mode)
			}
			t.Logf("%s: %v", mode, err)
		})
	}
}

// OpenFile's stream of reads is checked reply by reply: a runner that says "more" for ever is
// bounded by the caller's cap and by its context, one that says "more" with less than asked
// is an error, and random replies end in an error or bounded data, never a panic or a hang.
func TestHostileRunnerOpenFile(t *testing.T) {
	srv := sshd.Start(t)
	t.Run("read-endless", func(t *testing.T) {
		c, _ := withFakeRunner(t, srv, "read-endless")
		bounded(t, time.Minute, func() {
			r, err := c.OpenFile(context.Background(), "/etc/hostname")
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, io.LimitReader(r, 20<<20))
			r.Close()
			if err != nil || n != 20<<20 {
				t.Errorf("capped read: %d bytes, %v", n, err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			r, err = c.OpenFile(ctx, "/etc/hostname")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			time.AfterFunc(200*time.Millisecond, cancel)
			if _, err := io.Copy(io.Discard, r); !errors.Is(err, context.Canceled) {
				t.Errorf("an endless stream after its context ended: %v", err)
			}
		})
	})
	modes := []string{"read-short", "empty", "garbage", "oversize", "silent"}
	for seed := 1; seed <= 20; seed++ {
		modes = append(modes, fmt.Sprintf("random:%d", seed))
	}
	for _, mode := range modes {
		c, _ := withFakeRunner(t, srv, mode)
		bounded(t, time.Minute, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r, err := c.OpenFile(ctx, "/etc/hostname")
			if err == nil {
				_, err = io.Copy(io.Discard, io.LimitReader(r, 64<<20))
				r.Close()
			}
			if strings.HasPrefix(mode, "random") {
				return
			}
			if err == nil {
				t.Errorf("%s: no error", mode)
			}
			t.Logf("%s: %v", mode, err)
		})
	}
}
