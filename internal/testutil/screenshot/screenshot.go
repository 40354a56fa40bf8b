// Package screenshot turns the screens of tmux tests into the HTML pages of docs/review-screens,
// through aha (https://github.com/theZiz/aha; Debian's package "aha"). The screens are made
// only when LIMACTL_MCP_SCREENS names the directory they go to:
//
//	LIMACTL_MCP_SCREENS=$PWD/docs/review-screens go test -count=1 -run TestReviewScreens ./internal/review/tui/ ./internal/command/reviewcmd/
//
// Without it the tests that make them are skipped: they make documentation, they check
// nothing the other tests do not.
package screenshot

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Env names the directory the screens are written to.
const Env = "LIMACTL_MCP_SCREENS"

// Saver writes screens as HTML pages into one directory.
type Saver struct {
	t      testing.TB
	dir    string
	aha    string
	prefix string
}

// New returns the Saver of the directory LIMACTL_MCP_SCREENS names, whose pages are titled
// prefix + their own title; it skips the test when the variable is not set, and fails it when
// aha is not installed.
func New(t testing.TB, prefix string) *Saver {
	t.Helper()
	dir := os.Getenv(Env)
	if dir == "" {
		t.Skip(Env + " is not set: no screens to make")
	}
	aha, err := exec.LookPath("aha")
	if err != nil {
		t.Fatal("aha is needed to turn the captures into HTML: ", err)
	}
	return &Saver{t: t, dir: dir, aha: aha, prefix: prefix}
}

// Save writes name.html: screen, a pane captured with its colours (SGR sequences), on black.
func (s *Saver) Save(name, title, screen string) {
	s.t.Helper()
	cmd := exec.Command(s.aha, "--black", "--title", s.prefix+title)
	cmd.Stdin = strings.NewReader(screen)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		s.t.Fatalf("aha: %v: %s", err, errOut.String())
	}
	if err := os.WriteFile(filepath.Join(s.dir, name+".html"), out.Bytes(), 0o644); err != nil {
		s.t.Fatal(err)
	}
}
