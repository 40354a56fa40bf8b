package guest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerclient"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
)

// errObserveNoSFTP is SFTP's answer on a connection that only reads a session (Agent.Observe):
// it has the agent's runner and nothing else.
var errObserveNoSFTP = errors.New("this connection only reads the session through its runner: it has no SFTP")

// observeAgent starts root's verified runner exe as the agent's user for a connection that only
// reads the session (Agent.Observe): one sudo, `net as` (which refuses a user it did not make),
// instead of a set-up's three (`net show`, the agent's SFTP server, the runner): 2 of the 3-5 s
// each policy session cost `status` on an emulated guest. The agent's uid and home come from
// the runner's hello (checked: a hostile answer misleads only the reading of the agent's own
// session). heal, when set, is what to do when the runner says no hello (healIfNoHello, which
// reads the runner back over SFTP). The link keeps no SFTP: nothing of the agent's may be read
// as the Lima user; one the link has (it checked the runner) is closed once the Lima user's
// home it was asked for (home, when set) is known.
func observeAgent(ctx context.Context, l *link, log *slog.Logger, exe string, login bool, heal func(*runnerclient.Client, error) (*runnerclient.Client, error), home func() (string, error)) (*runnerclient.Client, error) {
	a := l.agent
	t0 := time.Now()
	l.setup = &AgentSetup{User: a.User, Runner: exe}
	l.systemRunner = exe
	r, err := launchRunner(ctx, l, log, exe, login)
	if heal != nil {
		r, err = heal(r, err)
	}
	if err != nil {
		return nil, fmt.Errorf("starting the runner as the agent user %s in the guest (the session's server or `limactl mcp shell` sets that user up): %w", a.User, err)
	}
	h := r.Hello()
	if h.UID <= 0 || !path.IsAbs(h.Home) || path.Clean(h.Home) != h.Home || h.Home == "/" {
		r.Close()
		return nil, fmt.Errorf("the runner as the agent user %s answered uid %d, home %q: not an agent user's", a.User, h.UID, h.Home)
	}
	l.setup.UID, l.setup.Home, l.home = h.UID, h.Home, h.Home
	if home != nil {
		if _, err := home(); err != nil {
			r.Close()
			return nil, err
		}
	}
	if l.sftp != nil {
		_ = l.sftp.Close()
		l.sftp, l.sftpDone = nil, nil
	}
	log.Debug("runner started as the agent user (reading only)", "user", a.User, "took", time.Since(t0).Round(time.Millisecond))
	return r, nil
}

// dialObserving connects through the master m for an Agent.Observe whose Verified gives the
// root-owned runner another connection of this process checked: the runner as the agent on one
// session of the master, nothing else (no SFTP to check the runner with, and to close again:
// half a second and a session of the master less for each policy session `status` reads).
// ok false: there is no such runner; dial as usual.
func (c *Conn) dialObserving(ctx context.Context, t *sshlink.Target, m *sshlink.Master) (l *link, ok bool, err error) {
	a := c.opts.Agent
	if a == nil || !a.Observe || a.Verified == nil {
		return nil, false, nil
	}
	exe := a.Verified(ctx)
	if exe == "" {
		return nil, false, nil
	}
	l = c.newLink(t, sshlink.NewMasterTransport(m))
	abort := context.AfterFunc(ctx, l.t.Close)
	defer abort()
	r, err := observeAgent(ctx, l, c.log, exe, !c.opts.NoLoginShell, nil, nil)
	if err != nil {
		l.t.Close()
		// `net as` itself refused (no such user, not one it made): the guest's answer, which a
		// direct connection would only get again. Anything else (the master refusing the
		// session, say) is tried again directly.
		if nh := (*runnerclient.NoHelloError)(nil); errors.As(err, &nh) && strings.Contains(err.Error(), netAsRefusal) {
			err = refusedError{err}
		}
		return nil, true, err
	}
	l.ops = runnerBackend{r}
	l.watch(r.Done())
	return l, true, nil
}

// netAsRefusal starts what the runner's `net as` says when it refuses (cmd/limactl-mcp-runner).
const netAsRefusal = "limactl-mcp-runner net as: "

// refusedError is a failure of a connection through the master that a direct connection would
// only repeat (the guest itself refused): dial returns it as it is.
type refusedError struct{ error }

func (e refusedError) Unwrap() error { return e.error }
