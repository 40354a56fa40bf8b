package guest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"sync"
	"time"

	"github.com/pkg/sftp"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerbin"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerclient"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// Where the runner lives in the guest decides what proves it unchanged before a start.
//
// The guest user is the agent's user. A runner file that user can write is read back and
// hashed before every start (runnerIntact): 3.3 MB, 170-280 ms on an emulated guest whose CPU
// lacks AES instructions, where sshd encrypts at ~15 MB/s; most of a new process's wait for
// its first answer. A runner kept where that user cannot write, a root-owned file in
// root-owned directories, is proven unchanged by a few lstats (one round trip). It is
// installed there once per runner version with `sudo -n`, which Lima's default user has
// without a password. A guest without it keeps the user's copy and its read-back.
//
// Root can still replace it, and the agent has sudo in a default Lima guest (it can replace
// sshd too): that is why every reply of the runner is checked as hostile input (guest/runnerclient).

// systemRunnerDir is the root-owned directory of the runner (a variable for the tests only).
var systemRunnerDir = "/usr/local/libexec/limactl-mcp"

// runnerImage is the embedded runner for the guest's architecture: its ID and size at once,
// its bytes (3.3 MB to decompress) only when a start needs them, to install or read back.
type runnerImage struct {
	id    string
	size  int64
	bytes func() ([]byte, error)
}

func embeddedRunner(arch string) (*runnerImage, error) {
	id, size, err := runnerbin.Info(arch)
	if err != nil {
		return nil, err
	}
	return &runnerImage{id: id, size: size, bytes: sync.OnceValues(func() ([]byte, error) {
		bin, _, err := runnerbin.Binary(arch)
		return bin, err
	})}, nil
}

// noSystemRunner, in the user's runner directory, records that the runner could not be
// installed as root, so that later starts skip the attempt (a session each). The agent can
// write it too; all it gains is the slower path, which is verified as well.
const noSystemRunner = "no-system-runner"

// systemRunner returns the path of a runner only root can change that holds bin, installing
// it there when it is missing or not safely root's; ok is false when that cannot be done (no
// passwordless sudo, a read-only /usr/local): the caller then uses the user's copy.
func systemRunner(ctx context.Context, l *link, log *slog.Logger, img *runnerImage, home func() (string, error)) (exe string, ok bool, err error) {
	exe = path.Join(systemRunnerDir, "runner-"+img.id)
	if ok, err := rootOwned(ctx, l, exe, img.size); err != nil || ok {
		return exe, ok, err
	}
	h, err := home()
	if err != nil {
		return exe, false, err
	}
	marker := path.Join(h, runnerDir, noSystemRunner)
	// An agent under a network policy needs root's runner: it tries whatever an earlier start
	// recorded (and records nothing: without sudo it fails anyway).
	if _, err := l.sftp.Lstat(marker); err == nil && l.agent == nil {
		return exe, false, nil
	}
	bin, err := img.bytes()
	if err != nil {
		return exe, false, err
	}
	t0 := time.Now()
	if err := installSystemRunner(ctx, l, exe, bin); err != nil {
		if ctx.Err() != nil {
			return exe, false, ctx.Err()
		}
		if l.agent != nil {
			return exe, false, fmt.Errorf("%w: installing the runner: %v", ErrPolicyNeedsSudo, err)
		}
		log.Info("the guest runner cannot be kept where only root can change it; using the user's copy, read back before each start", "reason", err)
		if err := l.sftp.MkdirAll(path.Dir(marker)); err == nil {
			if f, err := l.sftp.Create(marker); err == nil {
				_ = f.Close()
			}
		}
		return exe, false, nil
	}
	// Once after installing: the lstats prove who can change it, the read-back what it holds.
	ok, err = rootOwned(ctx, l, exe, img.size)
	if err != nil || !ok {
		return exe, false, err
	}
	if ok, err = runnerIntact(ctx, l, exe, bin); err != nil || !ok {
		return exe, false, err
	}
	log.Info("installed the guest runner", "path", exe, "bytes", len(bin), "took", time.Since(t0).Round(time.Millisecond))
	return exe, true, nil
}

// rootOwned says whether exe is an executable regular file of size bytes that only root can
// change: it and every directory above it owned by uid 0, not a symlink, not writable by group
// or others. The lstats go out together: one round trip.
func rootOwned(ctx context.Context, l *link, exe string, size int64) (bool, error) {
	if !path.IsAbs(exe) || path.Clean(exe) != exe {
		return false, nil
	}
	var names []string
	for p := exe; ; p = path.Dir(p) {
		names = append(names, p)
		if p == "/" {
			break
		}
	}
	type result struct {
		name string
		fi   os.FileInfo
		err  error
	}
	results := make(chan result, len(names))
	for _, n := range names {
		go func() {
			fi, err := l.sftp.Lstat(n)
			results <- result{n, fi, err}
		}()
	}
	t := time.NewTimer(runnerStartTimeout)
	defer t.Stop()
	ok := true
	for range names {
		select {
		case r := <-results:
			switch {
			case r.err != nil || !safeForRoot(r.fi):
				ok = false
			case r.name == exe:
				ok = ok && r.fi.Mode().IsRegular() && r.fi.Size() == size && r.fi.Mode()&0o100 != 0
			}
		case <-ctx.Done():
			return false, ctx.Err()
		case <-t.C:
			return false, fmt.Errorf("%w: checking the runner %s did not finish within %s", sshlink.ErrLinkDown, exe, runnerStartTimeout)
		}
	}
	return ok, nil
}

// safeForRoot: owned by root, not a symlink, writable by no one else.
func safeForRoot(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*sftp.FileStat)
	if !ok || st.UID != 0 {
		return false
	}
	m := fi.Mode()
	return m&os.ModeSymlink == 0 && (m.IsDir() || m.IsRegular()) && m.Perm()&0o022 == 0
}

// installSystemRunner writes bin to exe as root (`sudo -n`: never a password prompt), through
// a temporary file and a rename, and removes the older runners beside it.
func installSystemRunner(ctx context.Context, l *link, exe string, bin []byte) error {
	dir := path.Dir(exe)
	q := shellquote.Quote
	script := `set -e; umask 022; d=` + q(dir) + `; mkdir -p "$d"; chown root:root "$d"; chmod 0755 "$d"; ` +
		`t="$d/.tmp-$$"; cat > "$t"; chown root:root "$t"; chmod 0755 "$t"; mv -f "$t" ` + q(exe) + `; ` +
		`for f in "$d"/runner-*; do [ "$f" = ` + q(exe) + ` ] || rm -f "$f"; done`
	cmd := `if [ "$(id -u)" = 0 ]; then exec sh -c ` + q(script) + `; else exec sudo -n sh -c ` + q(script) + `; fi`
	ctx, cancel := context.WithTimeout(ctx, runnerStartTimeout)
	defer cancel()
	if _, err := l.stream(ctx, cmd, bytes.NewReader(bin)); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("installing the runner as root did not finish within %s", runnerStartTimeout)
		}
		return err
	}
	return nil
}

// healIfNoHello returns r, err as they are unless err says the runner at exe did not say
// hello. Then, once and before any fallback, the file is verified in full (read back and
// hashed against the embedded copy) and, when it is not the embedded runner, put back from
// the embedded copy (as root for root's runner: `sudo -n`; without it, or for the user's own
// copy, the user's copy, read back or written anew); and the runner is started again. A
// lstat proves only who can change root's runner, not what it holds: in open mode the agent
// has sudo, and a same-size root-owned file passes it. The person is told, in one line
// (warning level: every command shows it on stderr).
func healIfNoHello(ctx context.Context, l *link, log *slog.Logger, img *runnerImage, exe string, system, login bool, home func() (string, error), r *runnerclient.Client, err error) (*runnerclient.Client, error) {
	var nh *runnerclient.NoHelloError
	if err == nil || !errors.As(err, &nh) || ctx.Err() != nil {
		return r, err
	}
	first := err
	bin, err := img.bytes()
	if err != nil {
		return nil, first
	}
	intact, err := runnerIntact(ctx, l, exe, bin)
	if err != nil {
		return nil, fmt.Errorf("%w; reading the runner back: %v", first, err)
	}
	what := "its file is the embedded runner, byte for byte"
	if !intact {
		what, exe, err = replaceRunner(ctx, l, img, bin, exe, system, home)
		if err != nil {
			return nil, fmt.Errorf("%w; its file is not the embedded runner, and putting it back failed: %v", first, err)
		}
	}
	log.Warn(fmt.Sprintf("the guest runner did not start as expected (%v): %s; starting it again", first, what))
	r, err = launchRunner(ctx, l, log, exe, login)
	if err != nil {
		return nil, fmt.Errorf("%w; %s, and it still did not start: %v", first, what, err)
	}
	return r, nil
}

// replaceRunner puts the embedded runner back in place of exe, which holds something else, and
// says what it did and which file to start.
func replaceRunner(ctx context.Context, l *link, img *runnerImage, bin []byte, exe string, system bool, home func() (string, error)) (string, string, error) {
	if system {
		err := installSystemRunner(ctx, l, exe, bin)
		if err == nil {
			ok, verr := rootOwned(ctx, l, exe, img.size)
			if verr == nil && ok {
				ok, verr = runnerIntact(ctx, l, exe, bin)
			}
			if verr != nil {
				return "", "", verr
			}
			if !ok {
				return "", "", fmt.Errorf("the reinstalled runner %s does not read back as the embedded one", exe)
			}
			return "its file held other bytes than the embedded runner: reinstalled it from the embedded copy", exe, nil
		}
		if l.agent != nil {
			// Only root's runner serves an agent under a policy.
			return "", "", fmt.Errorf("reinstalling it as root: %v", err)
		}
		// The user's copy, as a guest without sudo has; root's file is not this link's runner.
		l.systemRunner = ""
		h, herr := home()
		if herr != nil {
			return "", "", herr
		}
		dir := path.Join(h, runnerDir)
		user := path.Join(dir, "runner-"+img.id)
		if ok, ierr := runnerIntact(ctx, l, user, bin); ierr != nil {
			return "", "", ierr
		} else if !ok {
			if uerr := upload(l, dir, user, bin); uerr != nil {
				return "", "", fmt.Errorf("reinstalling it as root: %v; copying it to %s: %v", err, user, uerr)
			}
		}
		return fmt.Sprintf("its file held other bytes than the embedded runner and could not be reinstalled as root (%v): using the user's copy %s, read back", err, user), user, nil
	}
	if err := upload(l, path.Dir(exe), exe, bin); err != nil {
		return "", "", err
	}
	return "its file held other bytes than the embedded runner: copied it again from the embedded copy", exe, nil
}
