package guest

import (
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
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerclient"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// runnerDir is where the runner is kept in the guest, relative to the user's home.
const runnerDir = ".cache/limactl-mcp"

// runnerStartTimeout bounds each step of the runner's start.
const runnerStartTimeout = runnerclient.StartTimeout

// startRunner makes sure the guest holds the runner unchanged (runner_place.go), copying it
// there if not, and starts it (with the login environment for its commands when login is
// set). waiting, when not nil, is a shell started beforehand (runnerclient.Waiting)
// that execs the runner once told its path. home gives the guest user's home directory (the
// caller may still be asking for it).
func startRunner(ctx context.Context, l *link, log *slog.Logger, login bool, waiting *runnerclient.Waiting, home func() (string, error)) (*runnerclient.Client, error) {
	if waiting != nil {
		defer waiting.Abandon() // unless it was told a path
	}
	arch := l.target.Arch
	if arch == "" {
		out, err := l.t.Output(ctx, "uname -m")
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
		if l.agent.Observe {
			heal := func(r *runnerclient.Client, err error) (*runnerclient.Client, error) {
				return healIfNoHello(ctx, l, log, img, exe, true, login, home, r, err)
			}
			return observeAgent(ctx, l, log, exe, login, heal, home)
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
	var r *runnerclient.Client
	if waiting != nil {
		r, err = waiting.Exec(ctx, log, exe)
	} else {
		r, err = launchRunner(ctx, l, log, exe, login)
	}
	return healIfNoHello(ctx, l, log, img, exe, ok, login, home, r, err)
}

// launchRunner starts exe (a verified runner) in a new session and reads its hello: as the
// agent's user when the link has one.
func launchRunner(ctx context.Context, l *link, log *slog.Logger, exe string, login bool) (*runnerclient.Client, error) {
	cmd := "exec " + shellquote.Quote(exe) + " " + runnerclient.ServeArgs(login)
	if l.setup != nil {
		if l.setup.EnvFile != "" {
			cmd += " --env-file " + shellquote.Quote(l.setup.EnvFile)
		}
		cmd = l.agent.As(l.setup.Runner, cmd)
	} else if l.envFile != "" {
		cmd += " --env-file " + shellquote.Quote(l.envFile)
	}
	return runnerclient.Launch(ctx, l.t, log, cmd)
}

// runnerIntact says whether exe holds exactly bin. The guest user (so the agent) can write
// that file, so its content is read back and hashed before every start: a size or a name
// proves nothing. What this cannot rule out is a swap between this check and the exec (the
// guest user can also replace sshd itself with sudo): that is why every reply of the runner
// is checked as hostile input as well (guest/runnerclient).
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
		return false, fmt.Errorf("%w: reading the runner %s back from the guest did not finish within %s", sshlink.ErrLinkDown, exe, runnerStartTimeout)
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
