package shellcmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/preview"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// Previews of the command: the dev servers it (an agent in the VM, a person at the shell)
// starts are forwarded to the host's loopback while the command runs, as serve forwards its
// background processes' (internal/preview; docs/background-processes.md). The command's
// processes are those that carry its mark in their environment (runnerproto.ShellMarkVar); the
// session's connection, whose runner runs as the command's user, lists their listening sockets
// every previewInterval and carries each host connection to the guest port through its sshd.
// `limactl mcp ports` and `status` read the record, as they read serve's.

// previewInterval is how often the command's listening sockets are listed.
const previewInterval = 2 * time.Second

// previewConn is what the previews need of the session's connection (guest.Conn).
type previewConn interface {
	ShellPorts(ctx context.Context, req runnerproto.ShellPortsRequest) (*runnerproto.ShellPortsResult, error)
	DialGuest(ctx context.Context, addr string) (io.ReadWriteCloser, error)
}

// newMark is a command's mark: 32 hex digits, found only where it was set.
func newMark() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// shellPreviews forwards the ports of one command while it runs.
type shellPreviews struct {
	fwd    *preview.Forwarder
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startPreviews forwards the ports of the processes marked mark through conn (publish: the
// host address to listen on), recorded under store for `ports` and `status`, until Stop.
func startPreviews(conn previewConn, store staging.Store, st *staging.State, session, mark, publish string, log *slog.Logger) (*shellPreviews, error) {
	fwd, err := preview.New(preview.Options{Dial: conn.DialGuest, Publish: publish, Logger: log,
		Record: &preview.RecordFile{Dir: filepath.Join(store.Dir, "ports"), Record: preview.Record{
			ServePID: os.Getpid(), Shell: true, SessionID: staging.SessionIDOf(st.Workdir, session), Session: session, Workdir: st.Workdir}}})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &shellPreviews{fwd: fwd, cancel: cancel}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(previewInterval)
		defer t.Stop()
		failed := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
			r, err := conn.ShellPorts(cctx, runnerproto.ShellPortsRequest{Mark: mark})
			ccancel()
			if err != nil {
				if ctx.Err() == nil && !failed {
					log.Debug("cannot list the command's listening ports (tried again every few seconds)", "error", err)
				}
				failed = true
				continue
			}
			failed = false
			fwd.Sync(map[int][]runnerproto.BgPort{0: r.Ports})
		}
	}()
	return p, nil
}

// Stop ends the forwards and removes the record.
func (p *shellPreviews) Stop() {
	p.cancel()
	p.wg.Wait()
	p.fwd.Close()
}
