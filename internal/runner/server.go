// Package runner is the guest side of limactl-mcp: a small server that runs on one SSH channel
// inside the guest. Every command it runs gets the user's login environment (loginenv.go)
// without paying for a login shell each time.
package runner

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// Serve answers requests read from in until it reaches EOF. With login, the commands it runs
// get the user's login environment.
func Serve(in io.Reader, out io.Writer, login bool) error {
	s := &server{out: bufio.NewWriter(out), running: map[uint64]chan struct{}{}, env: noLoginEnv(), ckpt: newCkptCache()}
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
	r := bufio.NewReader(in)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		var req runnerproto.Request
		if err := runnerproto.ReadFrame(r, &req); err != nil {
			s.killAll()
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

type server struct {
	mu      sync.Mutex // guards out
	out     *bufio.Writer
	rmu     sync.Mutex // guards running
	running map[uint64]chan struct{}
	env     *loginEnv
	ckpt    *ckptCache
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
	switch {
	case req.Exec != nil:
		s.env.wait()
		kill := make(chan struct{})
		s.rmu.Lock()
		s.running[req.ID] = kill
		s.rmu.Unlock()
		resp.Exec = runExec(req.Exec, func(int) {}, kill)
		s.rmu.Lock()
		delete(s.running, req.ID)
		s.rmu.Unlock()
	case req.Glob != nil:
		var err error
		resp.Glob, err = runGlob(req.Glob)
		if err != nil {
			resp.Error = err.Error()
		}
	case req.Grep != nil:
		s.env.wait() // git is found on the login PATH
		resp.Grep = runGrep(req.Grep)
	case req.Scan != nil:
		resp.Scan = runScan(req.Scan)
	case req.Hash != nil:
		resp.Hash = runHash(req.Hash)
	case req.List != nil:
		var err error
		resp.List, err = runList(req.List)
		if err != nil {
			resp.Error = err.Error()
		}
	case req.Read != nil:
		var err error
		resp.Read, err = runRead(req.Read)
		if err != nil {
			resp.Error = err.Error()
		}
	case req.Write != nil:
		resp.Write = runWrite(req.Write)
	case req.BgStart != nil:
		s.env.wait() // a background command gets the login environment like any other
		var err error
		if resp.BgStart, err = runBgStart(req.BgStart, selfExe()); err != nil {
			resp.Error = err.Error()
		}
	case req.BgRead != nil:
		var err error
		if resp.BgRead, err = runBgRead(req.BgRead); err != nil {
			resp.Error = err.Error()
		}
	case req.BgList != nil:
		var err error
		if resp.BgList, err = runBgList(req.BgList); err != nil {
			resp.Error = err.Error()
		}
	case req.BgSignal != nil:
		var err error
		if resp.BgSignal, err = runBgSignal(req.BgSignal); err != nil {
			resp.Error = err.Error()
		}
	case req.BgEnd != nil:
		var err error
		if resp.BgEnd, err = runBgEnd(req.BgEnd); err != nil {
			resp.Error = err.Error()
		}
	case req.CkptCreate != nil:
		var err error
		if resp.CkptCreate, err = runCkptCreate(req.CkptCreate, s.ckpt); err != nil {
			resp.Error = err.Error()
		}
	case req.CkptList != nil:
		var err error
		if resp.CkptList, err = runCkptList(req.CkptList, s.ckpt); err != nil {
			resp.Error = err.Error()
		}
	case req.CkptRestore != nil:
		var err error
		if resp.CkptRestore, err = runCkptRestore(req.CkptRestore, s.ckpt); err != nil {
			resp.Error = err.Error()
		}
	case req.CkptManifest != nil:
		var err error
		if resp.CkptManifest, err = runCkptManifest(req.CkptManifest, s.ckpt); err != nil {
			resp.Error = err.Error()
		}
	default:
		resp.Error = "unknown request"
	}
	return resp
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
