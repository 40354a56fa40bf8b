package guest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/limactl-mcp/limactl-mcp/internal/headtail"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// runnerDir is where the runner is kept in the guest, relative to the user's home.
const runnerDir = ".cache/limactl-mcp"

// runnerStartTimeout bounds the start of the runner: the user's shell and one exec.
const runnerStartTimeout = 60 * time.Second

// maxJunk bounds what the user's shell (its ~/.bashrc, say) may print on stdout before the
// runner starts.
const maxJunk = 1 << 20

// runnerClient talks to one runner over one SSH session (of our own connection, or of an ssh
// client process through the instance's ControlMaster).
type runnerClient struct {
	stop   func() // ends the session
	stdin  io.WriteCloser
	hello  runnerproto.Hello
	stderr *headtail.Buffer

	wmu sync.Mutex // guards writes to stdin

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan *runnerproto.Response
	err     error         // why the runner is gone
	done    chan struct{} // closed when it is gone
}

// startRunner makes sure the guest holds the runner unchanged (runner_place.go), copying it
// there if not, and starts it (with the login environment for its commands when login is
// set). waiting, when not nil, is a shell started beforehand (waitingRunner)
// that execs the runner once told its path. home gives the guest user's home directory (the
// caller may still be asking for it).
func startRunner(ctx context.Context, l *link, log *slog.Logger, login bool, waiting *waitingRunner, home func() (string, error)) (*runnerClient, error) {
	if waiting != nil {
		defer waiting.abandon() // unless it was told a path
	}
	arch := l.target.Arch
	if arch == "" {
		var out string
		var err error
		if l.client != nil {
			out, err = runSession(l.client, "uname -m")
		} else {
			out, err = l.master.output(ctx, "uname -m")
		}
		if err != nil {
			return nil, fmt.Errorf("asking the guest for its architecture: %w", err)
		}
		arch = strings.TrimSpace(out)
	}
	img, err := embeddedRunner(arch)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	exe, ok, err := systemRunner(ctx, l, log, img, home)
	if err != nil {
		return nil, err
	}
	log.Debug("guest runner checked", "path", exe, "root-owned", ok, "took", time.Since(t0).Round(time.Millisecond))
	if ok {
		l.systemRunner = exe
	}
	if l.agent != nil {
		// Only root's runner, started as the agent's user: the agent cannot change it, and
		// setting the agent up needs the sudo that installed it.
		if !ok {
			return nil, ErrPolicyNeedsSudo
		}
		t0 = time.Now()
		if err := l.becomeAgent(ctx, exe); err != nil {
			return nil, err
		}
		log.Debug("agent user set up", "user", l.agent.User, "policy", l.agent.Policy, "took", time.Since(t0).Round(time.Millisecond))
		r, err := launchRunner(ctx, l, log, exe, login)
		return healIfNoHello(ctx, l, log, img, exe, true, login, home, r, err)
	}
	if !ok {
		// The user's copy, which the agent can write: read back before every start.
		h, err := home()
		if err != nil {
			return nil, err
		}
		dir := path.Join(h, runnerDir)
		exe = path.Join(dir, "runner-"+img.id)
		bin, err := img.bytes()
		if err != nil {
			return nil, err
		}
		t0 = time.Now()
		ok, err := runnerIntact(ctx, l, exe, bin)
		if err != nil {
			return nil, err
		}
		log.Debug("guest runner read back", "path", exe, "intact", ok, "took", time.Since(t0).Round(time.Millisecond))
		if !ok {
			log.Info("copying the guest runner into the guest", "path", exe, "bytes", len(bin))
			if err := upload(l, dir, exe, bin); err != nil {
				return nil, fmt.Errorf("copying the runner to %s: %w", exe, err)
			}
		}
	}
	var r *runnerClient
	if waiting != nil {
		r, err = waiting.exec(ctx, log, exe)
	} else {
		r, err = launchRunner(ctx, l, log, exe, login)
	}
	return healIfNoHello(ctx, l, log, img, exe, ok, login, home, r, err)
}

// waitingRunner is a shell started in the guest before the runner is checked: it waits
// for a line on its stdin, the path of the runner the host has just verified, and execs it.
// The shell's start (a session and the user's profile) then overlaps the check instead of
// following it; nothing runs from the runner's file before the check.
type waitingRunner struct {
	r    *runnerClient
	br   *bufio.Reader
	told bool
}

// startWaitingRunner starts the waiting shell through the ControlMaster m.
func startWaitingRunner(m *master, login bool) (*waitingRunner, *proc, error) {
	r := newRunnerClient()
	// sh's read takes one byte at a time from a pipe: nothing meant for the runner is lost.
	cmd := "exec sh -c " + shellquote.Quote(`IFS= read -r exe && exec "$exe" `+serveArgs(login))
	stdin, stdout, p, err := m.pipe(cmd, r.stderr)
	if err != nil {
		return nil, nil, err
	}
	r.stdin = stdin
	r.stop = func() {
		stdin.Close() // the guest side reads the end of its input and exits
		p.kill()
	}
	return &waitingRunner{r: r, br: bufio.NewReaderSize(stdout, 64<<10)}, p, nil
}

// exec tells the shell to exec exe (verified) and reads the runner's hello.
func (w *waitingRunner) exec(ctx context.Context, log *slog.Logger, exe string) (*runnerClient, error) {
	if strings.ContainsAny(exe, "\n\x00") {
		return nil, fmt.Errorf("the runner's path %q cannot be passed on a line", exe)
	}
	w.told = true
	if _, err := io.WriteString(w.r.stdin, exe+"\n"); err != nil {
		w.r.stop()
		return nil, fmt.Errorf("starting the runner: %w (stderr: %q)", err, w.r.stderrText())
	}
	return w.r.awaitHello(ctx, log, w.br)
}

// abandon ends a shell that was never told a path.
func (w *waitingRunner) abandon() {
	if w != nil && !w.told {
		w.r.stop()
	}
}

func newRunnerClient() *runnerClient {
	return &runnerClient{
		stderr:  headtail.New(4096, 4096),
		pending: map[uint64]chan *runnerproto.Response{},
		done:    make(chan struct{}),
	}
}

// serveArgs are the runner's arguments. With login, the runner gives the commands it runs the
// user's login environment (internal/runner/loginenv.go) without being started through a login
// shell: its start does not wait for the user's profile.
func serveArgs(login bool) string {
	if login {
		return "serve --login"
	}
	return "serve"
}

// launchRunner starts exe (a verified runner) in a new session and reads its hello: as the
// agent's user when the link has one (through the master too), else over our own connection.
func launchRunner(ctx context.Context, l *link, log *slog.Logger, exe string, login bool) (*runnerClient, error) {
	r := newRunnerClient()
	cmd := "exec " + shellquote.Quote(exe) + " " + serveArgs(login)
	if l.setup != nil {
		if l.setup.EnvFile != "" {
			cmd += " --env-file " + shellquote.Quote(l.setup.EnvFile)
		}
		cmd = l.agent.as(l.setup.Runner, cmd)
	}
	if l.master != nil {
		stdin, stdout, p, err := l.master.pipe(cmd, r.stderr)
		if err != nil {
			return nil, err
		}
		r.stdin = stdin
		r.stop = func() {
			stdin.Close()
			p.kill()
		}
		l.procs = append(l.procs, p)
		return r.awaitHello(ctx, log, bufio.NewReaderSize(stdout, 64<<10))
	}
	s, err := l.client.NewSession()
	if err != nil {
		return nil, err
	}
	if r.stdin, err = s.StdinPipe(); err != nil {
		s.Close()
		return nil, err
	}
	stdout, err := s.StdoutPipe()
	if err != nil {
		s.Close()
		return nil, err
	}
	s.Stderr = r.stderr
	if err := s.Start(cmd); err != nil {
		s.Close()
		return nil, err
	}
	r.stop = func() { s.Close() }
	return r.awaitHello(ctx, log, bufio.NewReaderSize(stdout, 64<<10))
}

// awaitHello reads the runner's hello (after whatever the user's shell printed) and starts reading
// its replies; on failure it stops the session.
func (r *runnerClient) awaitHello(ctx context.Context, log *slog.Logger, br *bufio.Reader) (*runnerClient, error) {
	var err error
	helloc := make(chan error, 1)
	go func() { helloc <- r.readHello(br) }()
	timer := time.NewTimer(runnerStartTimeout)
	defer timer.Stop()
	select {
	case err = <-helloc:
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = errors.New("timed out")
	}
	if err != nil {
		r.stop()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("starting the runner: %w (stderr: %q)", err, r.stderrText())
		}
		return nil, &noHelloError{fmt.Errorf("starting the runner: %w (stderr: %q)", err, r.stderrText())}
	}
	go r.readLoop(br)
	log.Debug("guest runner started", "pid", r.hello.PID, "shell", r.hello.Shell, "git", r.hello.HasGit, "login_env", r.hello.LoginEnv)
	return r, nil
}

// runnerIntact says whether exe holds exactly bin. The guest user (so the agent) can write
// that file, so its content is read back and hashed before every start: a size or a name
// proves nothing. What this cannot rule out is a swap between this check and the exec (the
// guest user can also replace sshd itself with sudo): that is why every reply of the runner
// is checked as hostile input as well (replies.go).
func runnerIntact(ctx context.Context, l *link, exe string, bin []byte) (bool, error) {
	fi, err := l.sftp.Lstat(exe)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(bin)) || fi.Mode()&0o100 == 0 {
		return false, nil
	}
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := l.sftp.Open(exe)
		if err != nil {
			done <- result{}
			return
		}
		defer f.Close()
		// One ReadAt of the expected size and a byte more: the SFTP client sends its requests
		// concurrently (a sequential read costs a round trip per 32 KiB), and the byte more
		// must not be there.
		buf := make([]byte, len(bin)+1)
		n, err := f.ReadAt(buf, 0)
		got := sha256.Sum256(buf[:min(n, len(bin))])
		want := sha256.Sum256(bin)
		done <- result{ok: n == len(bin) && errors.Is(err, io.EOF) && got == want}
	}()
	// Opening a file the agent swapped for a fifo blocks the guest's sftp-server: bound it.
	t := time.NewTimer(runnerStartTimeout)
	defer t.Stop()
	select {
	case r := <-done:
		return r.ok, r.err
	case <-ctx.Done():
		return false, ctx.Err()
	case <-t.C:
		return false, fmt.Errorf("%w: reading the runner %s back from the guest did not finish within %s", errLinkDown, exe, runnerStartTimeout)
	}
}

// upload writes bin to exe atomically: a temporary file, then a rename.
func upload(l *link, dir, exe string, bin []byte) error {
	if err := l.sftp.MkdirAll(dir); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.tmp-%d", exe, time.Now().UnixNano())
	f, err := l.sftp.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return err
	}
	if _, err := f.ReadFrom(bytes.NewReader(bin)); err != nil {
		f.Close()
		_ = l.sftp.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		_ = l.sftp.Remove(tmp)
		return err
	}
	if err := l.sftp.Chmod(tmp, 0o755); err != nil {
		_ = l.sftp.Remove(tmp)
		return err
	}
	if err := l.sftp.PosixRename(tmp, exe); err != nil {
		_ = l.sftp.Remove(tmp)
		return err
	}
	return nil
}

// readHello skips whatever the user's shell printed before the runner took over stdout, up to
// the runner's first frame, which is its Hello.
func (r *runnerClient) readHello(br *bufio.Reader) error {
	magic := []byte(runnerproto.Magic)
	var seen int
	for {
		b, err := br.ReadByte()
		if err != nil {
			return fmt.Errorf("the runner did not start: %w", err)
		}
		seen++
		if seen > maxJunk {
			return errors.New("the user's shell printed too much before the runner started")
		}
		if b != magic[0] {
			continue
		}
		peek, err := br.Peek(len(magic) - 1)
		if err == nil && bytes.Equal(peek, magic[1:]) {
			_, _ = br.Discard(len(magic) - 1)
			break
		}
	}
	var resp runnerproto.Response
	if err := runnerproto.ReadFrame(br, &resp); err != nil {
		return err
	}
	if err := checkHello(resp.Hello); err != nil {
		return err
	}
	r.hello = *resp.Hello
	return nil
}

func (r *runnerClient) readLoop(br *bufio.Reader) {
	var err error
	for {
		var resp runnerproto.Response
		if err = runnerproto.ReadFrame(br, &resp); err != nil {
			break
		}
		r.mu.Lock()
		ch, ok := r.pending[resp.ID]
		delete(r.pending, resp.ID)
		r.mu.Unlock()
		if ok {
			ch <- &resp
		}
	}
	if errors.Is(err, io.EOF) {
		err = fmt.Errorf("%w: the runner exited (stderr: %q)", errLinkDown, r.stderrText())
	} else {
		err = fmt.Errorf("%w: %v", errLinkDown, err)
	}
	r.fail(err)
}

func (r *runnerClient) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	r.err = err
	close(r.done)
	for id, ch := range r.pending {
		delete(r.pending, id)
		close(ch)
	}
	r.stop()
}

func (r *runnerClient) close() { r.fail(errors.New("closed")) }

// idle says whether no call is waiting for an answer.
func (r *runnerClient) idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending) == 0
}

func (r *runnerClient) stderrText() string {
	o := r.stderr.Output()
	return strings.TrimSpace(string(o.Head) + string(o.Tail))
}

// call sends req and waits for its response. When ctx ends first and req is an exec, the
// command's process group is killed and the call waits briefly for what it printed.
func (r *runnerClient) call(ctx context.Context, req *runnerproto.Request) (*runnerproto.Response, error) {
	ch := make(chan *runnerproto.Response, 1)
	r.mu.Lock()
	if r.err != nil {
		r.mu.Unlock()
		return nil, r.err
	}
	r.nextID++
	req.ID = r.nextID
	r.pending[req.ID] = ch
	r.mu.Unlock()
	if err := r.send(req); err != nil {
		r.fail(fmt.Errorf("%w: %v", errLinkDown, err))
		return nil, r.err
	}
	var deadline <-chan time.Time
	if d := callDeadline(req); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		deadline = t.C
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, r.err
		}
		return r.checked(req, resp, nil)
	case <-deadline:
		r.fail(fmt.Errorf("%w: the guest runner did not answer within %s; it is started again on the next call", errLinkDown, callDeadline(req)))
		return nil, r.err
	case <-ctx.Done():
	}
	if req.Exec != nil {
		_ = r.send(&runnerproto.Request{Signal: &runnerproto.SignalRequest{Target: req.ID}})
		select {
		case resp, ok := <-ch:
			if ok {
				return r.checked(req, resp, ctx.Err())
			}
		case <-time.After(5 * time.Second):
		}
	}
	r.mu.Lock()
	delete(r.pending, req.ID)
	r.mu.Unlock()
	return nil, ctx.Err()
}

// checked returns resp when it fits req; a runner that sends a malformed reply is stopped (the
// next call starts, and verifies, a new one).
func (r *runnerClient) checked(req *runnerproto.Request, resp *runnerproto.Response, err error) (*runnerproto.Response, error) {
	if bad := checkReply(req, resp); bad != nil {
		r.fail(bad)
		return nil, bad
	}
	return resp, err
}

func (r *runnerClient) send(req *runnerproto.Request) error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	return runnerproto.WriteFrame(r.stdin, req)
}

// runSession runs one command in a new session and returns its stdout.
func runSession(client *ssh.Client, cmd string) (string, error) {
	s, err := client.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	stderr := newCapBuffer(64 << 10)
	stdout := newCapBuffer(maxCommandOutput)
	s.Stdout, s.Stderr = stdout, stderr
	if err := s.Run(cmd); err != nil {
		return "", fmt.Errorf("%s: %w (%s)", truncate(cmd, 200), err, strings.TrimSpace(stderr.buf.String()))
	}
	return stdout.result(cmd)
}
