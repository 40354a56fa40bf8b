package shellcmd_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/shellcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// procsWith sweeps /proc once: the processes whose command line holds value, and those whose
// environment does, each with its chain of parents' command lines.
func procsWith(value string) (cmdline, environ []string) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		// Its parent first: a short-lived process (a login shell's `id -u`) may be gone by
		// the time its environment is read, and its chain must still reach the command (a
		// chain cut at the process itself read as a leak on a loaded machine).
		ppid := parentOf(pid)
		if b, err := os.ReadFile(d + "/cmdline"); err == nil && strings.Contains(string(b), value) {
			cmdline = append(cmdline, chain(pid, ppid))
		}
		if b, err := os.ReadFile(d + "/environ"); err == nil && strings.Contains(string(b), value) {
			environ = append(environ, chain(pid, ppid))
		}
	}
	return cmdline, environ
}

// parentOf is pid's parent (0 when it cannot be read).
func parentOf(pid int) int {
	st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := strings.LastIndexByte(string(st), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(st[i+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// chain is pid's command line and its parents', ppid its parent as read before (0: read it
// now).
func chain(pid, ppid int) string {
	var parts []string
	for i := 0; pid > 1 && i < 40; i++ {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		parts = append(parts, fmt.Sprintf("%d:%s", pid, strings.ReplaceAll(string(b), "\x00", " ")))
		if i > 0 || ppid == 0 {
			ppid = parentOf(pid)
		}
		if ppid == 0 {
			break
		}
		pid = ppid
	}
	return strings.Join(parts, " | ")
}

// The values of --env are on no command line and in no environment but the command's own
// (issue 23, finding 2): while the command runs, every process of the machine (the sshd's
// guest side is this machine) is swept, cmdline and environ; after it, nothing holds the
// value, and no file of the login user's home does.
func TestShellEnvValueOnlyInTheCommand(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	value := "lmcp-sshd-secret-" + hex.EncodeToString(b)
	marker := "lmcp-sshd-command-" + hex.EncodeToString(b[:6])
	flagDir, err := os.MkdirTemp("", "lmcp-env-flag-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(flagDir)
	if err := os.Chmod(flagDir, 0o755); err != nil {
		t.Fatal(err)
	}
	flag := filepath.Join(flagDir, "go")

	var mu sync.Mutex
	bad := map[string]bool{}
	own, sweeps := 0, 0
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			cl, env := procsWith(value)
			mu.Lock()
			for _, c := range cl {
				bad["cmdline: "+c] = true
			}
			for _, e := range env {
				if strings.Contains(e, marker) {
					own++
				} else {
					bad["environ: "+e] = true
				}
			}
			if own > 0 {
				sweeps++
				if sweeps == 3 {
					_ = os.WriteFile(flag, nil, 0o644)
				}
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	script := `i=0; while [ ! -e ` + flag + ` ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; printf %s "$SECRET_X" | sha256sum`
	stdout, stderr, code := run(t, f, map[string]string{"SECRET_X": value}, shellcmd.Options{NoReview: true, Env: []string{"SECRET_X"}, Command: []string{"sh", "-c", script, marker}})
	close(stop)
	<-done
	sum := sha256.Sum256([]byte(value))
	if code != 0 || !strings.Contains(stdout, hex.EncodeToString(sum[:])) {
		t.Fatalf("exit %d: the command did not get the value\nstdout %q\nstderr:\n%s", code, stdout, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if own == 0 || sweeps < 3 {
		t.Fatalf("the sweep never saw the command's own environment (%d sightings, %d sweeps): the check is blind", own, sweeps)
	}
	for h := range bad {
		t.Errorf("the value is outside the command's environment: %s", h)
	}
	if cl, env := procsWith(value); len(cl)+len(env) > 0 {
		t.Errorf("after the run: %v %v", cl, env)
	}
	if left, _ := filepath.Glob(filepath.Join(f.Srv.Home, ".cache/limactl-mcp/env.*")); len(left) > 0 {
		t.Errorf("files of values left in the guest: %v", left)
	}
	_ = filepath.Walk(f.Srv.Home, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Size() < 1<<20 {
			if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), value) {
				t.Errorf("the value is in %s", p)
			}
		}
		return nil
	})
}

// A copy and a store that an older version left open to other users are closed by the next
// `shell` (issue 23, finding 1), and a copy that is closed already is not touched (a chmod,
// even to the same mode, is a change the probe would report). The store's own change time is
// not compared: the probe keeps its files there.
func TestShellClosesAnOpenRoom(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	store := filepath.Join(f.Srv.Home, ".cache/limactl-mcp")
	f.Srv.Run(t, "chmod", "755", f.GuestPath, store)
	if _, stderr, code := run(t, f, nil, shellcmd.Options{NoReview: true, Command: []string{"true"}}); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if got := f.Srv.Run(t, "stat", "-c", "%a", f.GuestPath, store); got != "700\n700\n" {
		t.Errorf("modes after shell: %q, want 700 and 700", got)
	}
	ctime := func() string { return f.Srv.Run(t, "stat", "-c", "%z", f.GuestPath) }
	before := ctime()
	if _, stderr, code := run(t, f, nil, shellcmd.Options{NoReview: true, Command: []string{"true"}}); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if after := ctime(); after != before {
		t.Errorf("a closed room was changed again (change times %q, then %q)", before, after)
	}
	if got := f.Srv.Run(t, "stat", "-c", "%a", f.GuestPath, store); got != "700\n700\n" {
		t.Errorf("modes after a second shell: %q, want 700 and 700", got)
	}
}
