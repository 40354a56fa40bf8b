package runner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerbin"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerbin/sourcehash"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/lockedbuf"
)

// The runner's tests drive it over the protocol, the way the host does, and run once for each
// runner there is: this package's code in the test process, and each runner binary embedded in
// the host (internal/guest/runnerbin) as a process of its own: the one for this machine's
// architecture natively, the other under QEMU user-mode emulation (`qemu-aarch64` from
// Debian's qemu-user on an amd64 machine, which hack/e2e/setup.sh installs). So the arm64
// runner that Apple Silicon guests get answers every request the amd64 one does, with the same
// assertions. The commands a runner starts are this machine's own programs (sh, sleep): under
// emulation only the runner itself is emulated.

// runnerKinds are the runners every test runs against: "in-process", then the embedded binaries.
var runnerKinds = []string{"in-process", "amd64", "arm64"}

// qemuFor names the user-mode emulators that run a Linux binary of a Go architecture.
var qemuFor = map[string][]string{
	"amd64": {"qemu-x86_64", "qemu-x86_64-static"},
	"arm64": {"qemu-aarch64", "qemu-aarch64-static"},
}

// callDeadline bounds one request; emulation is slow, so this is generous: it only keeps a
// runner that stopped answering from hanging the test binary.
const callDeadline = 10 * time.Minute

// forEachRunner runs f once against each runner, each in a subtest with a runner of its own.
func forEachRunner(t *testing.T, f func(t *testing.T, r *testRunner)) {
	t.Helper()
	for _, kind := range runnerKinds {
		t.Run(kind, func(t *testing.T) {
			f(t, startRunner(t, kind))
		})
	}
}

// testRunner is one runner the tests talk to, over its stdin and stdout, as the host does.
type testRunner struct {
	kind  string
	pid   int // of the runner process (the test process for in-process)
	hello runnerproto.Hello
	in    io.WriteCloser
	wmu   sync.Mutex // guards writes to in

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan *runnerproto.Response
	err     error         // why the runner stopped answering
	done    chan struct{} // closed when it has
	stderr  lockedBuffer  // of a runner process
}

type lockedBuffer = lockedbuf.Buffer

// startRunner starts a runner of the given kind, reads its hello, and stops it (checking that
// it exits cleanly at the end of its input) when the test ends.
func startRunner(t *testing.T, kind string) *testRunner {
	t.Helper()
	return startRunnerWith(t, kind, runnerOpts{})
}

// runnerOpts change how a runner process starts.
type runnerOpts struct {
	env   []string // its whole environment (default: the test's)
	login bool     // serve --login
}

// startRunnerWith is startRunner with opts (for a runner process, not in-process).
func startRunnerWith(t *testing.T, kind string, opts runnerOpts) *testRunner {
	t.Helper()
	r := &testRunner{kind: kind, pending: map[uint64]chan *runnerproto.Response{}, done: make(chan struct{})}
	var out io.Reader
	var exited <-chan error
	switch kind {
	case "in-process":
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ch := make(chan error, 1)
		go func() {
			err := Serve(inR, outW, false) // never the login environment: it would change the test process's
			outW.CloseWithError(fmt.Errorf("Serve returned (%v)", err))
			ch <- err
		}()
		r.in, out, exited, r.pid = inW, outR, ch, os.Getpid()
	default:
		args := []string{"serve"}
		if opts.login {
			args = append(args, "--login")
		}
		cmd := runnerCommand(t, kind, args...)
		if opts.env != nil {
			cmd.Env = opts.env
		}
		cmd.Stderr = &r.stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting the %s runner (%s): %v", kind, strings.Join(cmd.Args, " "), err)
		}
		ch := make(chan error, 1)
		go func() { ch <- cmd.Wait() }()
		r.in, out, exited, r.pid = in, stdout, ch, cmd.Process.Pid
		t.Cleanup(func() { _ = cmd.Process.Kill() }) // runs last: only a runner that did not exit
	}
	br := bufio.NewReaderSize(out, 64<<10)
	t.Cleanup(func() { r.stop(t, exited) })

	start := time.Now()
	helloc := make(chan error, 1)
	go func() { helloc <- r.readHello(br) }()
	select {
	case err := <-helloc:
		if err != nil {
			t.Fatalf("%s runner: %v (stderr: %q)", kind, err, r.stderr.String())
		}
	case <-time.After(callDeadline):
		t.Fatalf("%s runner: no hello within %s (stderr: %q)", kind, callDeadline, r.stderr.String())
	}
	home, _ := os.UserHomeDir()
	for _, kv := range opts.env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	_, gitErr := exec.LookPath("git")
	if h := r.hello; h.PID != r.pid || h.UID != os.Getuid() || h.Home != home || h.HasGit != (gitErr == nil) {
		t.Fatalf("%s runner: hello %+v; want pid %d, uid %d, home %q, git %v", kind, h, r.pid, os.Getuid(), home, gitErr == nil)
	}
	t.Logf("%s runner: pid %d said hello after %v", kind, r.pid, time.Since(start).Round(time.Millisecond))
	go r.readLoop(br)
	return r
}

// runnerCommand is the command line that runs the embedded runner for arch on this machine:
// natively, or under a QEMU user-mode emulator.
func runnerCommand(t *testing.T, arch string, args ...string) *exec.Cmd {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skipf("the %s runner is a Linux binary", arch)
	}
	// A binary built from other sources would answer for code that is no longer there.
	if want, err := sourcehash.HashSources(filepath.Join("..", "..")); err != nil {
		t.Fatal(err)
	} else if runnerbin.SourceHash() != want {
		t.Fatalf("the embedded runners were built from other sources than this package's: run `go generate ./internal/guest/runnerbin`")
	}
	bin, id, err := runnerbin.Binary(arch)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "runner-"+arch+"-"+id)
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if len(args) == 0 {
		args = []string{"serve"}
	}
	if arch == runtime.GOARCH {
		return exec.Command(exe, args...)
	}
	for _, q := range qemuFor[arch] {
		if p, err := exec.LookPath(q); err == nil {
			// Go's signal-based preemption is known to wedge programs under QEMU user-mode
			// emulation (golang/go#36981; a runner once stopped answering for 10 minutes on a
			// loaded machine under Debian 12's QEMU 7.2): the emulated runner runs without it
			// (-E sets the guest program's environment whatever cmd.Env is). The runners on
			// real kernels, native and in a VM, keep it.
			return exec.Command(p, append([]string{"-E", "GODEBUG=asyncpreemptoff=1", exe}, args...)...)
		}
	}
	t.Fatalf("running the embedded %s runner on this %s machine needs QEMU user-mode emulation: none of %s is on PATH; "+
		"hack/e2e/setup.sh installs it (as root), or: apt-get install qemu-user",
		arch, runtime.GOARCH, strings.Join(qemuFor[arch], ", "))
	return nil
}

// readHello skips to the runner's magic and reads its first frame, which must be its hello.
func (r *testRunner) readHello(br *bufio.Reader) error {
	magic := []byte(runnerproto.Magic)
	got := make([]byte, len(magic))
	if _, err := io.ReadFull(br, got); err != nil {
		return fmt.Errorf("reading the magic: %w", err)
	}
	if !bytes.Equal(got, magic) {
		return fmt.Errorf("the runner began with %q, not the magic", got)
	}
	var resp runnerproto.Response
	if err := runnerproto.ReadFrame(br, &resp); err != nil {
		return fmt.Errorf("reading the hello: %w", err)
	}
	if resp.ID != 0 || resp.Hello == nil || resp.Hello.Version != runnerproto.Version {
		return fmt.Errorf("first frame %+v is not a hello of version %d", resp, runnerproto.Version)
	}
	r.hello = *resp.Hello
	return nil
}

func (r *testRunner) readLoop(br *bufio.Reader) {
	for {
		resp := new(runnerproto.Response)
		if err := runnerproto.ReadFrame(br, resp); err != nil {
			r.fail(err)
			return
		}
		r.mu.Lock()
		ch, ok := r.pending[resp.ID]
		delete(r.pending, resp.ID)
		r.mu.Unlock()
		if !ok {
			r.fail(fmt.Errorf("a response to no request pending (id %d)", resp.ID))
			return
		}
		ch <- resp
	}
}

func (r *testRunner) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	r.err = err
	close(r.done)
}

// stop closes the runner's input and checks that it exits cleanly.
func (r *testRunner) stop(t *testing.T, exited <-chan error) {
	r.wmu.Lock()
	_ = r.in.Close()
	r.wmu.Unlock()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("%s runner: at the end of its input: %v (stderr: %q)", r.kind, err, r.stderr.String())
		}
	case <-time.After(2 * time.Minute):
		t.Errorf("%s runner: still running 2m0s after the end of its input", r.kind)
	}
}

// send sends req with a new ID and returns the ID and where its response will come.
func (r *testRunner) send(req *runnerproto.Request) (uint64, <-chan *runnerproto.Response, error) {
	ch := make(chan *runnerproto.Response, 1)
	r.mu.Lock()
	if r.err != nil {
		r.mu.Unlock()
		return 0, nil, r.err
	}
	r.nextID++
	req.ID = r.nextID
	r.pending[req.ID] = ch
	r.mu.Unlock()
	return req.ID, ch, r.write(req)
}

// write sends one frame as it is (a signal, which has no response).
func (r *testRunner) write(req *runnerproto.Request) error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	return runnerproto.WriteFrame(r.in, req)
}

// goroutines asks a runner process that stopped answering for its goroutines' stacks (SIGQUIT:
// the Go runtime prints them and exits; QEMU user-mode emulation passes the signal on), so that
// a hang says where it is.
func (r *testRunner) goroutines() string {
	if r.kind == "in-process" {
		return ""
	}
	_ = syscall.Kill(r.pid, syscall.SIGQUIT)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		select {
		case <-r.done:
			time.Sleep(500 * time.Millisecond) // the rest of the dump
			return "; its goroutines at SIGQUIT:\n" + r.stderr.String()
		default:
		}
	}
	return "; no dump within 10 s of SIGQUIT (stderr: " + strconv.Quote(r.stderr.String()) + ")"
}

// wait waits for the response on ch.
func (r *testRunner) wait(ch <-chan *runnerproto.Response) (*runnerproto.Response, error) {
	select {
	case resp := <-ch:
		return resp, nil
	case <-r.done:
		select {
		case resp := <-ch:
			return resp, nil
		default:
		}
		return nil, fmt.Errorf("%s runner: %v (stderr: %q)", r.kind, r.err, r.stderr.String())
	case <-time.After(callDeadline):
		return nil, fmt.Errorf("%s runner: no answer within %s%s", r.kind, callDeadline, r.goroutines())
	}
}

// do sends req and waits for its response.
func (r *testRunner) do(req *runnerproto.Request) (*runnerproto.Response, error) {
	_, ch, err := r.send(req)
	if err != nil {
		return nil, err
	}
	return r.wait(ch)
}

// call is do for a test: a failure is reported (t.Error, so that it may be called from any
// goroutine) and an empty response returned, which the test's own checks then reject too.
func (r *testRunner) call(t *testing.T, req *runnerproto.Request) *runnerproto.Response {
	t.Helper()
	resp, err := r.do(req)
	if err != nil {
		t.Error(err)
		return &runnerproto.Response{Error: err.Error()}
	}
	return resp
}

var errNoResult = errors.New("no result in the response")

func (r *testRunner) exec(t *testing.T, req *runnerproto.ExecRequest) *runnerproto.ExecResult {
	t.Helper()
	resp := r.call(t, &runnerproto.Request{Exec: req})
	if resp.Exec == nil {
		t.Errorf("exec %q: %v (error %q)", req.Argv, errNoResult, resp.Error)
		return &runnerproto.ExecResult{ExitCode: -1000}
	}
	return resp.Exec
}

func (r *testRunner) grep(t *testing.T, req *runnerproto.GrepRequest) *runnerproto.GrepResult {
	t.Helper()
	resp := r.call(t, &runnerproto.Request{Grep: req})
	if resp.Grep == nil {
		t.Errorf("grep %q: %v (error %q)", req.Pattern, errNoResult, resp.Error)
		return &runnerproto.GrepResult{Error: "(no result)"}
	}
	return resp.Grep
}

func (r *testRunner) writeFile(t *testing.T, req *runnerproto.WriteRequest) *runnerproto.WriteResult {
	t.Helper()
	resp := r.call(t, &runnerproto.Request{Write: req})
	if resp.Write == nil {
		t.Errorf("write %s: %v (error %q)", req.Path, errNoResult, resp.Error)
		return &runnerproto.WriteResult{Error: "(no result)"}
	}
	return resp.Write
}
