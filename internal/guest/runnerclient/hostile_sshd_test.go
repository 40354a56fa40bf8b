package runnerclient

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// These tests play a runner the agent replaced (guest/testdata/fakerunner) against the client
// over a real sshd: whatever it sends, each call ends with a clear error, never a panic or a
// hang.

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
		out, err := exec.Command("go", "build", "-o", fakeBin, "../testdata/fakerunner").CombinedOutput()
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

// fakeClient is a client of the fake runner in mode, started the way the real runner is
// (`EXE serve`) on a connection of our own, through a wrapper that passes the mode.
func fakeClient(t *testing.T, srv *sshd.Server, mode string) *Client {
	t.Helper()
	bin := buildFake(t)
	tg := &sshlink.Target{Name: "sshd-test", Addr: srv.Addr, User: srv.User, Signers: []ssh.Signer{srv.ClientSigner},
		HostKeyCallback: ssh.FixedHostKey(srv.HostKey), Arch: runtime.GOARCH}
	d, err := sshlink.NewDirect(context.Background(), tg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	wrapper := fmt.Sprintf("%s/.fakerunner-%d.sh", srv.Home, time.Now().UnixNano())
	srv.Run(t, "sh", "-c", fmt.Sprintf("printf '#!/bin/sh\nexec %s %s\n' > %s && chmod 755 %s", bin, mode, wrapper, wrapper))
	t.Cleanup(func() { _ = os.Remove(wrapper) })
	r, err := Launch(context.Background(), d, slog.New(slog.DiscardHandler), "exec "+wrapper+" "+ServeArgs(false))
	if err != nil {
		t.Fatalf("starting the fake runner: %v", err)
	}
	t.Cleanup(r.Close)
	return r
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

// A runner that never answers: the call ends at its deadline (shortened here) with a clear
// error, and the runner is stopped.
func TestSilentRunnerDeadline(t *testing.T) {
	srv := sshd.Start(t)
	defer func(d time.Duration) { replySlack = d }(replySlack)
	replySlack = 2 * time.Second
	r := fakeClient(t, srv, "silent")
	req := &runnerproto.Request{Exec: &runnerproto.ExecRequest{Argv: []string{"true"}, Dir: "/", TimeoutMillis: 100, HeadBytes: 10, TailBytes: 10}}
	start := time.Now()
	bounded(t, 2*time.Minute, func() {
		_, err := r.Exec(context.Background(), *req.Exec)
		if err == nil || !strings.Contains(err.Error(), "did not answer") {
			t.Errorf("silent runner: %v", err)
		}
	})
	t.Logf("ended after %s (deadline %s)", time.Since(start).Round(time.Second), callDeadline(req))
}

// Seeded random replies: every call ends with an answer that fits its request or an error.
func TestRandomRunnerReplies(t *testing.T) {
	srv := sshd.Start(t)
	for seed := 1; seed <= 40; seed++ {
		r := fakeClient(t, srv, fmt.Sprintf("random:%d", seed))
		bounded(t, time.Minute, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			hs, err := r.Hash(ctx, "/", []tree.Name{"a", "b"})
			if err == nil && len(hs) != 2 {
				t.Errorf("seed %d: %d hashes for 2 paths, no error", seed, len(hs))
			}
			{
				res, err := r.Exec(ctx, runnerproto.ExecRequest{Argv: []string{"true"}, Dir: "/", TimeoutMillis: 1000, HeadBytes: 2, TailBytes: 2})
				if err == nil && (res == nil || len(res.Stdout.Head) > 2 || len(res.HeldBy) > maxHeldBy) {
					t.Errorf("seed %d: exec reply unchecked: %+v", seed, res)
				}
			}
			// A write's reply: an error, or one that fits the protocol; never a panic.
			{
				res, err := r.Write(ctx, runnerproto.WriteRequest{Path: "/nowhere/x", Data: []byte("x"), Mode: 0o644})
				if err == nil && (res == nil || len(res.Error) > 4096 || (res.NotRegular != "" && res.NotRegular != tree.Dir && res.NotRegular != tree.Other)) {
					t.Errorf("seed %d: write reply unchecked: %+v", seed, res)
				}
			}
		})
	}
}
