// Package tmuxtest runs a program in a real terminal for a test: a detached tmux session on a
// server of its own, whose screen the test reads and to which it types. The TUI tests, the
// review command end to end and serve in a terminal all drive it.
package tmuxtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Session is one program in its own tmux server.
type Session struct {
	t      testing.TB
	socket string
}

// Start runs the shell command line in a width×height pane. The pane's shell ignores the
// Ctrl-C the test sends (a handler, which the program does not inherit: it still gets its
// SIGINT), so that the pane, and with it the screen, outlives the program: without it the
// shell dies with the program's SIGINT, the pane closes, and its SIGHUP can kill the program
// before it has finished. Add "; sleep N" to the line to keep the last screen after the
// program exits. The session is killed when the test ends, and its screen logged if the
// test failed.
func Start(t testing.TB, width, height int, line string) *Session {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed (hack/e2e/setup.sh installs it)")
	}
	// A short socket path: sun_path holds 108 bytes.
	dir, err := os.MkdirTemp("", "tmx")
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{t: t, socket: filepath.Join(dir, "s")}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("screen at the end:\n%s", s.Screen())
		}
		_, _ = s.tmux("kill-server")
		_ = os.RemoveAll(dir)
	})
	if out, err := s.tmux("new-session", "-d", "-s", "t", "-x", strconv.Itoa(width), "-y", strconv.Itoa(height), "trap : INT; "+line); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	return s
}

func (s *Session) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-S", s.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	return string(out), err
}

// Screen is the visible pane as text.
func (s *Session) Screen() string {
	out, err := s.tmux("capture-pane", "-p", "-t", "t")
	if err != nil {
		return "capture-pane: " + err.Error() + "\n" + out
	}
	return out
}

// PaneTitle is the title the program set for the pane (with an escape sequence).
func (s *Session) PaneTitle() (string, error) {
	return s.tmux("display-message", "-p", "-t", "t", "#{pane_title}")
}

// ScreenEsc is the visible pane with its colours (SGR sequences).
func (s *Session) ScreenEsc() string {
	out, _ := s.tmux("capture-pane", "-p", "-e", "-t", "t")
	return out
}

// WaitFor polls the screen until it shows every one of want, and returns it; after timeout
// the test fails with the screen.
func (s *Session) WaitFor(timeout time.Duration, want ...string) string {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		scr := s.Screen()
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(scr, w)
		}
		if ok {
			return scr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out waiting for %q; screen:\n%s", want, scr)
		}
		time.Sleep(30 * time.Millisecond)
	}
}

// Keys sends tmux key names (Enter, Space, Down, Escape, C-c, y, ...).
func (s *Session) Keys(keys ...string) {
	s.t.Helper()
	if out, err := s.tmux(append([]string{"send-keys", "-t", "t"}, keys...)...); err != nil {
		s.t.Fatalf("send-keys %q: %v\n%s", keys, err, out)
	}
}

// TypeLine types text literally and presses Enter.
func (s *Session) TypeLine(text string) {
	s.t.Helper()
	if text != "" {
		if out, err := s.tmux("send-keys", "-t", "t", "-l", text); err != nil {
			s.t.Fatalf("send-keys: %v\n%s", err, out)
		}
	}
	s.Keys("Enter")
}

// Quote joins words into a shell command line, each single-quoted.
func Quote(words ...string) string {
	q := make([]string, len(words))
	for i, a := range words {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// Resize makes the window width×height, as a person resizing the terminal does: the program
// gets SIGWINCH.
func (s *Session) Resize(width, height int) {
	s.t.Helper()
	if out, err := s.tmux("resize-window", "-t", "t", "-x", strconv.Itoa(width), "-y", strconv.Itoa(height)); err != nil {
		s.t.Fatalf("resize-window: %v\n%s", err, out)
	}
}
