package servecmd

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lima-vm/lima/v2/pkg/limatype"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"
)

// serveFixture is a working directory and an sshd standing in for the instance.
type serveFixture struct {
	srv     *sshd.Server
	workdir string
	instDir string // the instance's directory: the session store is in it
}

func newServeFixture(t *testing.T) *serveFixture {
	srv := sshd.Start(t)
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &serveFixture{srv: srv, workdir: filepath.Join(tmp, "proj"), instDir: filepath.Join(tmp, "instance")}
	if err := os.MkdirAll(filepath.Join(f.workdir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.workdir, "src", "a.go"), []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// serve stages at the host's path unless that path cannot be used in the guest: here the
	// "guest" is this machine, so the test needs a working directory that is relocated.
	id := staging.SessionID(f.workdir)
	gpath, same := staging.GuestPathFor(f.workdir, srv.Home, id)
	if same {
		t.Skipf("the temporary directory %s would be staged onto itself (it is not under /tmp); set TMPDIR=/tmp", tmp)
	}
	t.Cleanup(func() {
		srv.Run(t, "rm", "-rf", gpath, filepath.Join(srv.Home, ".cache", "limactl-mcp", "sessions", id))
	})
	return f
}

// open is the serve Options.Open of the fixture: the sshd is a running instance, with a mount
// of the working directory if mounts.
func (f *serveFixture) open(t *testing.T, mounts bool) func(context.Context, *Options, *slog.Logger) (*sessionopen.Target, error) {
	return func(_ context.Context, opts *Options, log *slog.Logger) (*sessionopen.Target, error) {
		inst := &instance.Instance{Name: opts.Instance, Status: "Running", Dir: f.instDir}
		if mounts {
			inst.Config = &limatype.LimaYAML{Mounts: []limatype.Mount{{Location: f.workdir}}}
		}
		return &sessionopen.Target{
			Instance: inst,
			Store:    staging.StoreFor(inst.Dir),
			Conn:     guesttest.Connect(t, f.srv, guest.Options{Logger: log, NoRunner: opts.NoRunner}),
		}, nil
	}
}

// running is a serve Run over HTTP.
type running struct {
	url, token string
	stdout     *syncBuffer
	stderr     *syncBuffer
	stop       func() error
}

// startServe runs serve over HTTP on a free loopback port until stop is called.
func startServe(t *testing.T, opts *Options) *running {
	t.Helper()
	r := &running{stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	opts.IO = &iostreams.IOStreams{In: strings.NewReader(""), Out: r.stdout, ErrOut: r.stderr}
	opts.Instance = "sshd-test"
	opts.HTTP = HTTPOptions{Addr: "127.0.0.1:0"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, opts) }()
	stopped := false
	var err error
	r.stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			select {
			case err = <-done:
			case <-time.After(httpShutdownGrace + 10*time.Second):
				t.Errorf("serve did not return after its context ended")
			}
			if r.stdout.String() != "" {
				t.Errorf("serve wrote to stdout: %q", r.stdout.String())
			}
		}
		return err
	}
	t.Cleanup(func() {
		_ = r.stop()
		if t.Failed() {
			t.Logf("serve's stderr:\n%s", r.stderr.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := endpointLine.FindStringSubmatch(r.stderr.String()); m != nil {
			r.url, r.token = m[1], m[2]
			return r
		}
		select {
		case err := <-done:
			t.Fatalf("serve returned %v before printing the endpoint; stderr:\n%s", err, r.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no endpoint line on stderr:\n%s", r.stderr.String())
		}
	}
}

// pendingPaths is what pending_changes listed.
func pendingPaths(r *toolsuite.Result) string {
	return fmt.Sprint(r.Structured["changes"])
}

// serve stages the working directory, the tools work on the staged copy, and a restarted
// serve resumes it with the agent's work in it; --fresh stages again.
func TestServeStagesAndResumes(t *testing.T) {
	f := newServeFixture(t)
	ctx := ctxFor(t, 2*time.Minute)
	newFile := filepath.Join(f.workdir, "src", "b.go")

	r := startServe(t, &Options{Workdir: f.workdir, Open: f.open(t, false)})
	cs, err := connectHTTP(ctx, r.url, r.token)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	ir := cs.InitializeResult()
	if ir == nil || !strings.Contains(ir.Instructions, "Lima instance: sshd-test. Working directory: "+f.workdir+".") || !strings.Contains(ir.Instructions, "staged copy") {
		t.Errorf("instructions: %+v", ir)
	}
	toolsuite.MustOK(t, cs, "write_file", map[string]any{"path": newFile, "content": "package a // b\n"})
	if got := pendingPaths(toolsuite.MustOK(t, cs, "pending_changes", map[string]any{})); got != fmt.Sprintf("[map[kind:added path:%s]]", newFile) {
		t.Errorf("pending changes: %s", got)
	}
	if _, err := os.Stat(newFile); !os.IsNotExist(err) {
		t.Errorf("write_file reached the host (%v)", err)
	}
	_ = cs.Close()
	if err := r.stop(); err != nil {
		t.Fatalf("serve returned %v after its context ended, want nil", err)
	}
	if logs := r.stderr.String(); !strings.Contains(logs, `msg="working directory staged" workdir=`+f.workdir) {
		t.Errorf("no staging logged:\n%s", logs)
	}

	// Restarted: the agent's work is still pending.
	r = startServe(t, &Options{Workdir: f.workdir, Open: f.open(t, false)})
	cs, err = connectHTTP(ctx, r.url, r.token)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if got := pendingPaths(toolsuite.MustOK(t, cs, "pending_changes", map[string]any{})); got != fmt.Sprintf("[map[kind:added path:%s]]", newFile) {
		t.Errorf("pending changes after a restart: %s", got)
	}
	_ = cs.Close()
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if logs := r.stderr.String(); !strings.Contains(logs, `msg="working directory resumed"`) {
		t.Errorf("no resumption logged:\n%s", logs)
	}

	// --fresh: staged again, the agent's work gone.
	r = startServe(t, &Options{Workdir: f.workdir, Fresh: true, Debug: true, Open: f.open(t, false)})
	cs, err = connectHTTP(ctx, r.url, r.token)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if got := pendingPaths(toolsuite.MustOK(t, cs, "pending_changes", map[string]any{})); got != "[]" {
		t.Errorf("pending changes after --fresh: %s", got)
	}
	_ = cs.Close()
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	logs := r.stderr.String()
	for _, want := range []string{`msg="--fresh discards 1 pending change of the agent in the guest"`, `msg="working directory restaged"`, `level=DEBUG msg=connected`} {
		if !strings.Contains(logs, want) {
			t.Errorf("stderr lacks %s:\n%s", want, logs)
		}
	}
}

// On an instance with mounts, serve warns that nothing will be reviewable and works on the
// live directory.
func TestServeMountedInstance(t *testing.T) {
	f := newServeFixture(t)
	ctx := ctxFor(t, time.Minute)
	r := startServe(t, &Options{Workdir: f.workdir, Open: f.open(t, true)})
	cs, err := connectHTTP(ctx, r.url, r.token)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if ir := cs.InitializeResult(); ir == nil || strings.Contains(ir.Instructions, "staged copy") {
		t.Errorf("instructions: %+v", ir)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("tools/list: %v", err)
	}
	_ = cs.Close()
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if logs := r.stderr.String(); !strings.Contains(logs, "the instance mounts host directories") || strings.Contains(logs, "working directory staged") {
		t.Errorf("stderr:\n%s", logs)
	}
	if entries, err := os.ReadDir(f.instDir); err == nil && len(entries) > 0 {
		t.Errorf("a session store was made for a mounted instance: %v", entries)
	}
}

// A server for an instance that does not exist stays up, and every call tells the agent (and
// the person reading its transcript) what is wrong and what to do, instead of the client's
// bare "connection closed".
func TestServeMissingInstanceStaysUp(t *testing.T) {
	ctx := ctxFor(t, time.Minute)
	missing := func(context.Context, *Options, *slog.Logger) (*sessionopen.Target, error) {
		return nil, fmt.Errorf(`%w "confz": did you mean "confs"? (instances: confs, default)`, instance.ErrNotExist)
	}
	r := startServe(t, &Options{Workdir: t.TempDir(), Open: missing})
	cs, err := connectHTTP(ctx, r.url, r.token)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	for _, call := range []struct {
		name string
		args map[string]any
	}{
		{"run_shell_command", map[string]any{"directory": "/", "command": []string{"true"}}},
		{"read_file", map[string]any{"path": "/etc/hostname"}},
		{"pending_changes", map[string]any{}},
	} {
		toolsuite.MustError(t, cs, call.name, call.args, `no such Lima instance "confz"`, `did you mean "confs"`, "restart this MCP server")
	}
	if !strings.Contains(r.stderr.String(), `did you mean \"confs\"`) && !strings.Contains(r.stderr.String(), `did you mean "confs"`) {
		t.Errorf("stderr does not say it:\n%s", r.stderr.String())
	}
}
