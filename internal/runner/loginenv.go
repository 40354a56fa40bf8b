package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/atomicfile"
	"github.com/limactl-mcp/limactl-mcp/internal/runner/procenv"
)

// The commands the runner runs get the user's login environment (PATH from ~/.profile, and so
// on), as they would in `limactl shell`. The runner used to get it by being started through a
// login shell, which put that shell's start (70 ms in an emulated guest, more with a heavy
// profile) before every runner's first answer. Now the runner starts at once and learns the
// login environment itself: what a login shell adds to or removes from the environment sshd
// gave the runner (the delta), remembered in the user's cache together with a key of what the
// login shell reads. While that key still matches, the remembered delta applies at once; in
// any case a login shell runs in the background and its delta applies to the commands that
// start after it (so a change the key cannot see, such as a file a profile sources, is picked
// up by the next command). Commands wait only until one of the two is there.

// loginEnvTimeout bounds the login shell that reports the environment.
const loginEnvTimeout = 30 * time.Second

// maxLoginEnv caps what is read of that shell's output and of the remembered delta.
const maxLoginEnv = 1 << 20

// loginEnvMarker separates what a profile prints from the environment that follows it.
const loginEnvMarker = "__LIMACTL_MCP_LOGIN_ENV__"

// notFromLogin are variables a login shell sets for itself, not for the commands it would run.
var notFromLogin = []string{"_", "PWD", "OLDPWD", "SHLVL"}

// envDelta is what a login shell changes in the environment sshd gives.
type envDelta struct {
	Key   string            `json:"key"`
	Set   map[string]string `json:"set"`
	Unset []string          `json:"unset"`
}

// loginEnv brings the login environment to the runner's commands.
type loginEnv struct {
	base  map[string]string // the environment the runner started with (sshd's)
	cache string            // where the delta is remembered
	key   string
	ready chan struct{} // closed once commands may run
	once  sync.Once
	// How the first commands got their environment, for the host's log: "cached" (the
	// remembered delta), "login" (after a login shell), "unavailable" (neither: sshd's).
	mu     sync.Mutex
	source string
}

// startLoginEnv applies the remembered delta if it is still valid and starts a login shell in
// the background. Commands must wait for ready.
func startLoginEnv() *loginEnv {
	e := &loginEnv{base: environMap(os.Environ()), ready: make(chan struct{})}
	home := e.base["HOME"]
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	e.cache = filepath.Join(home, ".cache", "limactl-mcp", "login-env.json")
	e.key = loginEnvKey(e.base, home)
	if d, ok := e.remembered(); ok {
		e.apply(d)
		e.markReady("cached")
	}
	go e.refresh()
	return e
}

// noLoginEnv is for a runner whose host asked for no login environment (review, status).
func noLoginEnv() *loginEnv {
	e := &loginEnv{ready: make(chan struct{}), source: "none"}
	close(e.ready)
	return e
}

func (e *loginEnv) markReady(source string) {
	e.once.Do(func() {
		e.mu.Lock()
		e.source = source
		e.mu.Unlock()
		close(e.ready)
	})
}

// Source says how the first commands got their environment ("" while not known yet).
func (e *loginEnv) Source() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.source
}

// wait blocks until commands may run.
func (e *loginEnv) wait() { <-e.ready }

// refresh runs a login shell, remembers its delta, and applies it to the commands to come.
func (e *loginEnv) refresh() {
	d, err := e.capture()
	if err != nil {
		fmt.Fprintf(os.Stderr, "limactl-mcp-runner: the login shell's environment is unavailable (commands get sshd's): %v\n", err)
		e.markReady("unavailable")
		return
	}
	e.apply(d)
	// Remembered before the commands waiting for it are let go: once a command has run with the
	// login environment, the next runner finds it (a test that rewrites the cache between two
	// runners raced with this write when it came after).
	defer e.markReady("login")
	if data, err := json.Marshal(d); err == nil && os.MkdirAll(filepath.Dir(e.cache), 0o700) == nil {
		// A new file renamed over the old (internal/atomicfile): a runner killed midway leaves
		// the old delta or none. Not fsynced: a cache lost in a crash costs one login shell.
		if f, err := atomicfile.Create(filepath.Dir(e.cache), filepath.Base(e.cache), 0o600); err == nil {
			f.SkipSync()
			if _, err := f.Write(data); err == nil && f.Chmod(0o600) == nil {
				_ = f.Replace(e.cache)
			}
			f.Discard()
		}
	}
}

// capture runs `$SHELL -l` and returns what it changes.
func (e *loginEnv) capture() (*envDelta, error) {
	shell := e.base["SHELL"]
	if shell == "" {
		shell = "/bin/sh"
	}
	ctx, cancel := context.WithTimeout(context.Background(), loginEnvTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, shell, "-l", "-c", "echo "+loginEnvMarker+"; exec env -0")
	cmd.Env = os.Environ()
	cmd.Dir = e.base["HOME"]
	cmd.Stdin = nil // /dev/null: a profile that reads must not take the host's requests
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out, stderr bytes.Buffer
	cmd.Stdout = &limitWriter{w: &out, n: maxLoginEnv}
	cmd.Stderr = &limitWriter{w: &stderr, n: 4096}
	cmd.WaitDelay = time.Second // a background job of the profile holding stdout
	var err error
	procenv.Hold(func() { err = cmd.Start() })
	if err != nil {
		return nil, err
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return nil, fmt.Errorf("%s -l did not finish within %s", shell, loginEnvTimeout)
	}
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return nil, fmt.Errorf("%s -l: %v (%s)", shell, err, bytes.TrimSpace(stderr.Bytes()))
	}
	_, after, ok := bytes.Cut(out.Bytes(), []byte(loginEnvMarker+"\n"))
	if !ok {
		return nil, fmt.Errorf("%s -l printed no environment", shell)
	}
	login := map[string]string{}
	for _, kv := range bytes.Split(after, []byte{0}) {
		if k, v, ok := bytes.Cut(kv, []byte("=")); ok && len(k) > 0 {
			login[string(k)] = string(v)
		}
	}
	if len(login) == 0 {
		return nil, fmt.Errorf("%s -l printed an empty environment", shell)
	}
	d := &envDelta{Key: e.key, Set: map[string]string{}}
	for k, v := range login {
		if b, ok := e.base[k]; (!ok || b != v) && !slices.Contains(notFromLogin, k) {
			d.Set[k] = v
		}
	}
	for k := range e.base {
		if _, ok := login[k]; !ok && !slices.Contains(notFromLogin, k) {
			d.Unset = append(d.Unset, k)
		}
	}
	slices.Sort(d.Unset)
	return d, nil
}

// remembered is the delta in the cache if it was made under the same key.
func (e *loginEnv) remembered() (*envDelta, bool) {
	f, err := os.Open(e.cache)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxLoginEnv+1))
	if err != nil || len(data) > maxLoginEnv {
		return nil, false
	}
	var d envDelta
	if json.Unmarshal(data, &d) != nil || d.Key != e.key {
		return nil, false
	}
	return &d, true
}

// apply makes the process environment sshd's plus d.
func (e *loginEnv) apply(d *envDelta) {
	procenv.Replace(e.base, d.Unset, d.Set)
}

// loginEnvKey names what a login shell's environment follows from: the shell, the user, the
// environment it starts from (what a profile builds on) and the files the common shells read
// at login (bash, dash/sh, zsh, fish), each by identity, size and times. A file that one of
// them sources in turn is not in it; the background login shell catches that.
func loginEnvKey(base map[string]string, home string) string {
	h := sha256.New()
	fmt.Fprintf(h, "uid=%d\n", os.Getuid())
	for _, k := range []string{"SHELL", "HOME", "USER", "LOGNAME", "PATH", "LANG", "TERM"} {
		fmt.Fprintf(h, "%s=%q\n", k, base[k])
	}
	files := []string{
		"/etc/profile", "/etc/profile.d", "/etc/bash.bashrc", "/etc/environment", "/etc/default/locale",
		"/etc/zsh/zshenv", "/etc/zsh/zprofile", "/etc/zsh/zshrc", "/etc/zsh/zlogin", "/etc/zshenv", "/etc/zprofile",
		"/etc/fish/config.fish",
	}
	for _, f := range []string{".profile", ".bash_profile", ".bash_login", ".bashrc", ".zshenv", ".zprofile", ".zshrc", ".zlogin", ".config/fish/config.fish"} {
		files = append(files, filepath.Join(home, f))
	}
	if entries, err := os.ReadDir("/etc/profile.d"); err == nil {
		for _, en := range entries {
			files = append(files, filepath.Join("/etc/profile.d", en.Name()))
		}
	}
	for _, f := range files {
		var st syscall.Stat_t
		if err := syscall.Stat(f, &st); err != nil {
			fmt.Fprintf(h, "%s absent\n", f)
			continue
		}
		fmt.Fprintf(h, "%s %d %d %d %d.%d %d.%d\n", f, st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func environMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			m[k] = v
		}
	}
	return m
}
