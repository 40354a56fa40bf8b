package reviewcmd_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/limactl-mcp/limactl-mcp/internal/command/reviewcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/tmuxtest"
)

// compareHelperEnv makes the test binary run `review --compare` on its terminal (TestMain):
// the real command, its TUI on a tmux pane, on the sessions of a real sshd.
const compareHelperEnv = "LMCP_REVIEW_COMPARE_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(compareHelperEnv) == "1" {
		os.Exit(compareHelper())
	}
	os.Exit(m.Run())
}

// compareHelper runs `review INSTANCE --compare LIST` (without LIST, `review INSTANCE`) on the
// process's own terminal, with the sshd and working directory the environment names.
func compareHelper() int {
	// As the root command does: a second SIGINT after the TUI's handler is gone must not kill
	// the process.
	signal.Notify(make(chan os.Signal, 1), os.Interrupt)
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	key, err := os.ReadFile(os.Getenv("LMCP_H_KEY"))
	if err != nil {
		return fail(err)
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		return fail(err)
	}
	hostKey, _, _, _, err := ssh.ParseAuthorizedKey([]byte(os.Getenv("LMCP_H_HOSTKEY")))
	if err != nil {
		return fail(err)
	}
	target := &sshlink.Target{Name: sessiontest.Instance, Addr: os.Getenv("LMCP_H_ADDR"), User: os.Getenv("LMCP_H_USER"),
		Signers: []ssh.Signer{signer}, HostKeyCallback: ssh.FixedHostKey(hostKey), Arch: runtime.GOARCH}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	opts := &reviewcmd.Options{
		IO: iostreams.System(), Instance: sessiontest.Instance, Workdir: os.Getenv("LMCP_H_WORKDIR"),
		Compare: compareList(os.Getenv("LMCP_H_COMPARE")), Accessible: os.Getenv("LMCP_H_ACCESSIBLE") == "1",
		Open: func(_ context.Context, name string) (*sessionopen.Target, error) {
			conn := guest.New(func(context.Context) (*sshlink.Target, error) { return target, nil }, guest.Options{Logger: log, NoLoginShell: true})
			return &sessionopen.Target{Instance: &instance.Instance{Name: name, Status: "Running"}, Store: staging.Store{Dir: os.Getenv("LMCP_H_STORE")}, Conn: conn}, nil
		},
	}
	if record := os.Getenv("LMCP_H_RECORD"); record != "" {
		// The agent's network record for w, in a file of the "guest" (the sshd's user has no
		// sudo to ask root's runner for it), read through the review's own connection.
		opts.ReadRecord = func(ctx context.Context, t *sessionopen.Target, _, _ string) ([]byte, error) {
			return t.Conn.ReadFile(ctx, record, netpolicy.MaxRecordBytes)
		}
	}
	if err := reviewcmd.Run(context.Background(), opts); err != nil {
		fmt.Println("review failed:", err)
		return 1
	}
	fmt.Println("review done")
	return 0
}

// compareList is --compare's sessions; none (a plain review) when list is empty.
func compareList(list string) []string {
	if list == "" {
		return nil
	}
	return strings.Split(list, ",")
}

// startCompare runs `review --compare list` (list "": `review`) in a width×height tmux pane.
func startCompare(t *testing.T, f *sessiontest.Fixture, width, height int, list string, env ...string) *tmuxtest.Session {
	t.Helper()
	env = append(env, []string{
		compareHelperEnv + "=1", "TERM=xterm-256color", "COLORTERM=", "NO_COLOR=",
		"LMCP_H_ADDR=" + f.Srv.Addr, "LMCP_H_USER=" + f.Srv.User, "LMCP_H_KEY=" + f.Srv.ClientKeyPath,
		"LMCP_H_HOSTKEY=" + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(f.Srv.HostKey))),
		"LMCP_H_WORKDIR=" + f.Workdir, "LMCP_H_STORE=" + f.Store.Dir, "LMCP_H_COMPARE=" + list,
	}...)
	args := append([]string{"env", "-u", "CI"}, env...)
	args = append(args, "timeout", "--foreground", "120", os.Args[0], "-test.run=^$")
	return tmuxtest.Start(t, width, height, tmuxtest.Quote(args...)+"; sleep 30")
}

// The compare mode of the review TUI, in a real terminal, on forks on a real sshd: on a wide
// terminal the versions of a file are side by side; the person takes a hunk of try1 and one of
// try2 in one file, another file whole from try2, leaves one, takes one; the confirmation
// lists exactly that, with the session each comes from; the host ends exactly as picked.
func TestCompareTUI(t *testing.T) {
	f, _ := compareFixture(t)
	s := startCompare(t, f, 170, 40, "try1,try2,try3")
	const wait = time.Minute
	// b.txt: three versions, side by side (one row holds all three headings).
	// C's heading itself ("── C: try3"; the menu's "take C: try3" is there from the first
	// frame): a frame drawn before the terminal's width was known has two columns, and a
	// screen captured then once failed this check on a loaded machine.
	scr := s.WaitFor(wait, "[1/5] b.txt · compare", "3 versions", "choose hunks of each session", "── C: try3")
	sideBySide := false
	for _, l := range strings.Split(scr, "\n") {
		sideBySide = sideBySide || strings.Contains(l, "A: try1") && strings.Contains(l, "B: try2") && strings.Contains(l, "C: try3") && strings.Contains(l, "│")
	}
	if !sideBySide {
		t.Errorf("the versions of b.txt are not side by side on a wide terminal:\n%s", scr)
	}
	s.Keys("Down", "Down", "Down", "Enter") // choose hunks of each session
	s.WaitFor(wait, "Take hunk 1 of 1 of try1?", "+ONE")
	s.Keys("y")
	s.WaitFor(wait, "Take hunk 1 of 1 of try2?", "+TWO")
	s.Keys("y")
	s.WaitFor(wait, "Take hunk 1 of 1 of try3?", "+THREE")
	s.Keys("n")
	// bin.dat: try2's.
	s.WaitFor(wait, "[2/5] bin.dat · compare", "take B: try2")
	s.Keys("Down", "Enter")
	// c.txt: try2's.
	s.WaitFor(wait, "[3/5] c.txt · compare", "take B: try2")
	s.Keys("Down", "Enter")
	// d.txt: deleted by try2 only: left.
	s.WaitFor(wait, "[4/5] d.txt · compare", "changed by try2 only")
	s.Keys("Down", "Enter")
	// one.txt: try1's.
	s.WaitFor(wait, "[5/5] one.txt · compare", "take A: try1")
	s.Keys("Enter")
	scr = s.WaitFor(wait, "Apply these changes?", "write b.txt", "(from try1 and try2)", "create bin.dat (from try2)", "write c.txt (from try2)", "create one.txt (from try1)",
		"left pending in every session (1): d.txt", "Applied through session try1")
	if strings.Contains(scr, "try3)") {
		t.Errorf("the confirmation names try3, which nothing was taken of:\n%s", scr)
	}
	// Nothing is written before the confirmation.
	if f.ReadHost("c.txt") != "c\n" || f.ReadHost("one.txt") != "<missing>" || f.ReadHost("b.txt") != bWith(nil) {
		t.Error("the host changed before the confirmation")
	}
	s.Keys("y")
	s.WaitFor(wait, "Applied: 4 paths written on the host, through session try1", "review done")
	if got, want := f.ReadHost("b.txt"), bWith(map[int]string{2: "ONE", 13: "TWO"}); got != want {
		t.Errorf("b.txt on the host:\n%s\nwant\n%s", got, want)
	}
	if f.ReadHost("bin.dat") != "two\x00" || f.ReadHost("c.txt") != "c2\n" || f.ReadHost("one.txt") != "one\n" || f.ReadHost("d.txt") != "d\n" {
		t.Errorf("host: bin.dat %q, c.txt %q, one.txt %q, d.txt %q", f.ReadHost("bin.dat"), f.ReadHost("c.txt"), f.ReadHost("one.txt"), f.ReadHost("d.txt"))
	}
}

// On a narrow terminal the versions come one after another, and v shows them all in the
// scrollable view; hunks of two sessions that change the same lines are refused on the screen
// and chosen again; Esc aborts, and nothing is written.
func TestCompareTUINarrowAbort(t *testing.T) {
	f, _ := compareFixture(t)
	s := startCompare(t, f, 80, 40, "try1,try3")
	const wait = time.Minute
	scr := s.WaitFor(wait, "[1/4] b.txt · compare", "── A: try1", "B: try3", "2 versions")
	for _, l := range strings.Split(scr, "\n") {
		if strings.Contains(l, "A: try1") && strings.Contains(l, "B: try3") {
			t.Errorf("side by side on 80 columns:\n%s", scr)
		}
	}
	// v: every version in the scrollable view; q comes back.
	s.Keys("v")
	s.WaitFor(wait, "b.txt · 2 versions", "── B: try3", "+THREE")
	s.Keys("q")
	s.WaitFor(wait, "[1/4] b.txt · compare", "What should the host get?")
	s.Keys("Down", "Down", "Enter") // choose hunks of each session
	s.WaitFor(wait, "Take hunk 1 of 1 of try1?")
	s.Keys("y")
	s.WaitFor(wait, "Take hunk 1 of 1 of try3?")
	s.Keys("y")
	s.WaitFor(wait, "These hunks cannot be taken together", "change the same lines")
	s.Keys("y") // choose again
	s.WaitFor(wait, "[1/4] b.txt · compare")
	s.Keys("Escape")
	s.WaitFor(wait, "Aborted: nothing was applied", "review failed")
	if f.ReadHost("b.txt") != bWith(nil) || f.ReadHost("c.txt") != "c\n" || f.ReadHost("one.txt") != "<missing>" {
		t.Error("the host changed after an abort")
	}
}

// The compare in accessible mode (plain numbered prompts, for screen readers): each path's
// versions are printed whole before its question; hunks of two sessions are taken by their
// question (take, leave, or choose its lines);
// the confirmation is read as text; the host ends as picked.
func TestCompareTUIAccessible(t *testing.T) {
	f, _ := compareFixture(t)
	s := startCompare(t, f, 100, 40, "try2,try1", "LMCP_H_ACCESSIBLE=1")
	const wait = time.Minute
	// try2 first: the apply goes through it. b.txt: A is try2's, B try1's.
	s.WaitFor(wait, "[1/5] b.txt · compare", "── A: try2", "+TWO", "── B: try1", "+ONE", "3. choose hunks of each session", "Enter a number between 1 and 5")
	s.TypeLine("3")
	s.WaitFor(wait, "try2: hunk 1 of 1: what should happen?", "1. take the hunk", "2. leave the hunk (it stays pending in the guest)", "3. choose its lines one by one")
	s.TypeLine("1")
	s.WaitFor(wait, "try1: hunk 1 of 1: what should happen?")
	s.TypeLine("1")
	s.WaitFor(wait, "[2/5] bin.dat · compare", "1. take A: try2")
	s.TypeLine("2") // try1's
	s.WaitFor(wait, "[3/5] c.txt · compare", "4. take none")
	s.TypeLine("4")
	s.WaitFor(wait, "[4/5] d.txt · compare", "changed by try2 only")
	s.TypeLine("1")
	s.WaitFor(wait, "[5/5] one.txt · compare", "changed by try1 only")
	s.TypeLine("2") // none
	s.WaitFor(wait, "write b.txt (from try2 and try1)", "create bin.dat (from try1)", "delete d.txt (from try2)",
		"left pending in every session (2): c.txt, one.txt", "Apply these changes? [y/N]")
	s.TypeLine("y")
	s.WaitFor(wait, "Applied: 3 paths written on the host, through session try2", "review done")
	if got, want := f.ReadHost("b.txt"), bWith(map[int]string{2: "ONE", 13: "TWO"}); got != want {
		t.Errorf("b.txt on the host:\n%s\nwant\n%s", got, want)
	}
	if f.ReadHost("bin.dat") != "one\x00" || f.ReadHost("c.txt") != "c\n" || f.ReadHost("one.txt") != "<missing>" || f.ReadHost("d.txt") != "<missing>" {
		t.Errorf("host: bin.dat %q, c.txt %q, one.txt %q, d.txt %q", f.ReadHost("bin.dat"), f.ReadHost("c.txt"), f.ReadHost("one.txt"), f.ReadHost("d.txt"))
	}
}
