// Package runner is the guest side of limactl-mcp: a small server that runs on one SSH channel
// inside the guest (and on the fast lane it may open to the host: lane.go) and answers the
// host's requests (runnerproto), one table entry per kind (ops): commands, whose output it reads to the end (exec.go, collect.go), and the file tools'
// reads, writes, listings, globs, searches, scans and hashes. Every command it runs gets the
// user's login environment (loginenv.go) without paying for a login shell each time.
//
// What it answers with is mostly other packages': checkpoints (runner/checkpoint), background
// processes (runner/background), the process environment and how a command is made
// (runner/procenv), a tree's walk (runner/walk), a file put in place (internal/atomicfile). It
// is not the network policy the same binary enforces as root (internal/netpolicy).
package runner

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"

	"github.com/limactl-mcp/limactl-mcp/internal/runner/background"
	"github.com/limactl-mcp/limactl-mcp/internal/runner/checkpoint"
	"github.com/limactl-mcp/limactl-mcp/internal/runner/procenv"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// Serve answers requests read from in until it reaches EOF. With login, the commands it runs
// get the user's login environment.
func Serve(in io.Reader, out io.Writer, login bool) error {
	s := &server{state: &state{running: map[uint64]chan struct{}{}, env: noLoginEnv(), ckpt: checkpoint.NewCache()}, out: bufio.NewWriter(out)}
	if login {
		s.env = startLoginEnv()
	}
	if _, err := s.out.WriteString(runnerproto.Magic); err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	_, gitErr := exec.LookPath("git")
	if err := s.send(&runnerproto.Response{Hello: &runnerproto.Hello{
		Version:  runnerproto.Version,
		PID:      os.Getpid(),
		UID:      os.Getuid(),
		Home:     home,
		Shell:    os.Getenv("SHELL"),
		HasGit:   gitErr == nil,
		LoginEnv: s.env.Source(),
	}}); err != nil {
		return err
	}
	err := s.serve(in)
	s.killAll()
	return err
}

// serve answers the requests read from in, each in a goroutine of its own, until in ends
// (nil at EOF); it waits for the answers to be sent.
func (s *server) serve(in io.Reader) error {
	r := bufio.NewReader(in)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		var req runnerproto.Request
		if err := runnerproto.ReadFrame(r, &req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if req.Signal != nil {
			s.kill(req.Signal.Target)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.send(s.handle(&req))
		}()
	}
}

// A server answers on one connection (the channel, or the fast lane: lane.go); the state is
// the runner's, shared by both.
type server struct {
	*state
	mu   sync.Mutex // guards out
	out  *bufio.Writer
	lane bool // the fast lane's
}

type state struct {
	rmu     sync.Mutex // guards running
	running map[uint64]chan struct{}
	env     *loginEnv
	ckpt    *checkpoint.Cache
}

func (s *server) send(resp *runnerproto.Response) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := runnerproto.WriteFrame(s.out, resp); err != nil {
		return err
	}
	return s.out.Flush()
}

func (s *server) handle(req *runnerproto.Request) *runnerproto.Response {
	resp := &runnerproto.Response{ID: req.ID}
	for _, o := range ops {
		if o.is(req) {
			o.serve(s, req, resp)
			return resp
		}
	}
	resp.Error = "unknown request"
	return resp
}

// An op is one kind of request: whether a request is of that kind (its field is set), and
// how it is answered.
type op struct {
	is    func(*runnerproto.Request) bool
	serve func(s *server, req *runnerproto.Request, resp *runnerproto.Response)
}

// answer is the op of the requests that set field q, answered by run in field r of the
// response (and its error in Error).
func answer[Q, R any](q func(*runnerproto.Request) *Q, r func(*runnerproto.Response) **R, run func(s *server, id uint64, q *Q) (*R, error)) op {
	return op{
		is: func(req *runnerproto.Request) bool { return q(req) != nil },
		serve: func(s *server, req *runnerproto.Request, resp *runnerproto.Response) {
			res, err := run(s, req.ID, q(req))
			*r(resp) = res
			if err != nil {
				resp.Error = err.Error()
			}
		},
	}
}

// plain is run for an answer that needs nothing of the server.
func plain[Q, R any](f func(*Q) (*R, error)) func(*server, uint64, *Q) (*R, error) {
	return func(_ *server, _ uint64, q *Q) (*R, error) { return f(q) }
}

// infallible is plain for an answer that has no error (a failure is in the result).
func infallible[Q, R any](f func(*Q) *R) func(*server, uint64, *Q) (*R, error) {
	return func(_ *server, _ uint64, q *Q) (*R, error) { return f(q), nil }
}

// ops are the requests the runner answers; the first whose field is set answers a request.
// Signal is not among them: it is answered at once by Serve, never in a goroutine of its own.
var ops []op

// init fills ops: attach, one of them, answers on a server of its own (the lane), which
// looks requests up in ops.
func init() { ops = allOps() }

func allOps() []op {
	return []op{
		answer(func(q *runnerproto.Request) *runnerproto.ExecRequest { return q.Exec }, func(r *runnerproto.Response) **runnerproto.ExecResult { return &r.Exec }, (*server).exec),
		answer(func(q *runnerproto.Request) *runnerproto.GlobRequest { return q.Glob }, func(r *runnerproto.Response) **runnerproto.GlobResult { return &r.Glob }, plain(runGlob)),
		answer(func(q *runnerproto.Request) *runnerproto.GrepRequest { return q.Grep }, func(r *runnerproto.Response) **runnerproto.GrepResult { return &r.Grep }, (*server).grep),
		answer(func(q *runnerproto.Request) *runnerproto.ScanRequest { return q.Scan }, func(r *runnerproto.Response) **runnerproto.ScanResult { return &r.Scan }, infallible(runScan)),
		answer(func(q *runnerproto.Request) *runnerproto.HashRequest { return q.Hash }, func(r *runnerproto.Response) **runnerproto.HashResult { return &r.Hash }, infallible(runHash)),
		answer(func(q *runnerproto.Request) *runnerproto.ListRequest { return q.List }, func(r *runnerproto.Response) **runnerproto.ListResult { return &r.List }, plain(runList)),
		answer(func(q *runnerproto.Request) *runnerproto.ReadRequest { return q.Read }, func(r *runnerproto.Response) **runnerproto.ReadResult { return &r.Read }, plain(runRead)),
		answer(func(q *runnerproto.Request) *runnerproto.ReadManyRequest { return q.ReadMany }, func(r *runnerproto.Response) **runnerproto.ReadManyResult { return &r.ReadMany }, plain(runReadMany)),
		answer(func(q *runnerproto.Request) *runnerproto.WriteRequest { return q.Write }, func(r *runnerproto.Response) **runnerproto.WriteResult { return &r.Write }, infallible(runWrite)),
		answer(func(q *runnerproto.Request) *runnerproto.EditRequest { return q.Edit }, func(r *runnerproto.Response) **runnerproto.EditResult { return &r.Edit }, plain(runEdit)),
		answer(func(q *runnerproto.Request) *runnerproto.BgStartRequest { return q.BgStart }, func(r *runnerproto.Response) **runnerproto.BgStartResult { return &r.BgStart }, (*server).bgStart),
		answer(func(q *runnerproto.Request) *runnerproto.BgReadRequest { return q.BgRead }, func(r *runnerproto.Response) **runnerproto.BgReadResult { return &r.BgRead }, plain(background.Read)),
		answer(func(q *runnerproto.Request) *runnerproto.BgListRequest { return q.BgList }, func(r *runnerproto.Response) **runnerproto.BgListResult { return &r.BgList }, plain(background.List)),
		answer(func(q *runnerproto.Request) *runnerproto.BgSignalRequest { return q.BgSignal }, func(r *runnerproto.Response) **runnerproto.BgSignalResult { return &r.BgSignal }, plain(background.Signal)),
		answer(func(q *runnerproto.Request) *runnerproto.BgEndRequest { return q.BgEnd }, func(r *runnerproto.Response) **runnerproto.BgEndResult { return &r.BgEnd }, plain(background.End)),
		answer(func(q *runnerproto.Request) *runnerproto.ShellPortsRequest { return q.ShellPorts }, func(r *runnerproto.Response) **runnerproto.ShellPortsResult { return &r.ShellPorts }, plain(background.ShellPorts)),
		answer(func(q *runnerproto.Request) *runnerproto.CkptCreateRequest { return q.CkptCreate }, func(r *runnerproto.Response) **runnerproto.CkptCreateResult { return &r.CkptCreate }, (*server).ckptCreate),
		answer(func(q *runnerproto.Request) *runnerproto.CkptListRequest { return q.CkptList }, func(r *runnerproto.Response) **runnerproto.CkptListResult { return &r.CkptList }, (*server).ckptList),
		answer(func(q *runnerproto.Request) *runnerproto.CkptRestoreRequest { return q.CkptRestore }, func(r *runnerproto.Response) **runnerproto.CkptRestoreResult { return &r.CkptRestore }, (*server).ckptRestore),
		answer(func(q *runnerproto.Request) *runnerproto.CkptManifestRequest { return q.CkptManifest }, func(r *runnerproto.Response) **runnerproto.CkptManifestResult { return &r.CkptManifest }, (*server).ckptManifest),
		answer(func(q *runnerproto.Request) *runnerproto.CkptSeedRequest { return q.CkptSeed }, func(r *runnerproto.Response) **runnerproto.CkptSeedResult { return &r.CkptSeed }, (*server).ckptSeed),
		answer(func(q *runnerproto.Request) *runnerproto.AttachRequest { return q.Attach }, func(r *runnerproto.Response) **runnerproto.AttachResult { return &r.Attach }, (*server).attach),
	}
}

// exec runs a command, which a Signal naming the request's id kills.
func (s *server) exec(id uint64, req *runnerproto.ExecRequest) (*runnerproto.ExecResult, error) {
	s.env.wait()
	kill := make(chan struct{})
	s.rmu.Lock()
	s.running[id] = kill
	s.rmu.Unlock()
	res := runExec(req, func(int) {}, kill)
	s.rmu.Lock()
	delete(s.running, id)
	s.rmu.Unlock()
	return res, nil
}

func (s *server) grep(_ uint64, req *runnerproto.GrepRequest) (*runnerproto.GrepResult, error) {
	s.env.wait() // git is found on the login PATH
	return runGrep(req), nil
}

func (s *server) ckptCreate(_ uint64, req *runnerproto.CkptCreateRequest) (*runnerproto.CkptCreateResult, error) {
	return checkpoint.Create(req, s.ckpt)
}

func (s *server) ckptList(_ uint64, req *runnerproto.CkptListRequest) (*runnerproto.CkptListResult, error) {
	return checkpoint.List(req, s.ckpt)
}

func (s *server) ckptRestore(_ uint64, req *runnerproto.CkptRestoreRequest) (*runnerproto.CkptRestoreResult, error) {
	return checkpoint.Restore(req, s.ckpt)
}

func (s *server) ckptManifest(_ uint64, req *runnerproto.CkptManifestRequest) (*runnerproto.CkptManifestResult, error) {
	return checkpoint.Manifest(req, s.ckpt)
}

func (s *server) ckptSeed(_ uint64, req *runnerproto.CkptSeedRequest) (*runnerproto.CkptSeedResult, error) {
	return checkpoint.Seed(req, s.ckpt)
}

func (s *server) bgStart(_ uint64, req *runnerproto.BgStartRequest) (*runnerproto.BgStartResult, error) {
	s.env.wait() // a background command gets the login environment like any other
	return background.Start(req, procenv.SelfExe())
}

func (s *server) kill(id uint64) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if ch, ok := s.running[id]; ok {
		close(ch)
		delete(s.running, id)
	}
}

func (s *server) killAll() {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	for id, ch := range s.running {
		close(ch)
		delete(s.running, id)
	}
}
