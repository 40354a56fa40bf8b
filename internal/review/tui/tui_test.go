package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/tmuxtest"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
)

// The TUI tests run the real program (tuidemo) in a detached tmux session of 80×24, type
// into it with send-keys and read the screen with capture-pane.

var (
	demoOnce sync.Once
	demoPath string
	demoErr  error
	demoDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if demoDir != "" {
		_ = os.RemoveAll(demoDir)
	}
	os.Exit(code)
}

// buildDemo builds tuidemo once per test binary.
func buildDemo(t *testing.T) string {
	t.Helper()
	demoOnce.Do(func() {
		demoDir, demoErr = os.MkdirTemp("", "tuidemo")
		if demoErr != nil {
			return
		}
		demoPath = filepath.Join(demoDir, "tuidemo")
		out, err := exec.Command("go", "build", "-o", demoPath, "./tuidemo").CombinedOutput()
		if err != nil {
			demoErr = fmt.Errorf("go build tuidemo: %v\n%s", err, out)
		}
	})
	if demoErr != nil {
		t.Fatal(demoErr)
	}
	return demoPath
}

// tmuxSession is one tuidemo running in a terminal of its own, and where it writes its result.
type tmuxSession struct {
	*tmuxtest.Session
	t      *testing.T
	result string
}

// startTUI runs tuidemo on cs (with extra flags) in an 80×24 terminal.
func startTUI(t *testing.T, cs *review.Changeset, flags ...string) *tmuxSession {
	t.Helper()
	return startTUIAt(t, 80, 24, "", cs, flags...)
}

// startTUIAt runs tuidemo on cs in a width×height terminal, with env (VAR=value words) set.
func startTUIAt(t *testing.T, width, height int, env string, cs *review.Changeset, flags ...string) *tmuxSession {
	t.Helper()
	return startTUIFor(t, 60, width, height, env, cs, flags...)
}

// startTUIFor is startTUIAt for a session of at most limit seconds.
func startTUIFor(t *testing.T, limit, width, height int, env string, cs *review.Changeset, flags ...string) *tmuxSession {
	t.Helper()
	demo := buildDemo(t)
	dir := t.TempDir()
	fixture := filepath.Join(dir, "cs.json")
	data, err := json.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fixture, data, 0o644); err != nil {
		t.Fatal(err)
	}
	result := filepath.Join(dir, "result.json")
	args := append([]string{demo}, flags...)
	args = append(args, fixture, result)
	// timeout and the final sleep bound the life of a session the test could not kill (the
	// sleep keeps the last screen for the failure message).
	line := "env -u CI TERM=xterm-256color COLORTERM= NO_COLOR= " + env + " timeout --foreground " + fmt.Sprint(limit) + " " + tmuxtest.Quote(args...) + "; sleep 30"
	return &tmuxSession{Session: tmuxtest.Start(t, width, height, line), t: t, result: result}
}

// screen is the visible pane as text.
func (s *tmuxSession) screen() string { return s.Screen() }

// screenEsc is the visible pane with its colours (SGR sequences).
func (s *tmuxSession) screenEsc() string { return s.ScreenEsc() }

// waitFor polls the screen until it contains all of want.
// The wait is generous: on a loaded 2-core machine (a VM booting beside it) a redraw of a
// large screen has taken over 10 s; a screen that never comes still fails, after a minute.
func (s *tmuxSession) waitFor(want ...string) string {
	s.t.Helper()
	return s.WaitFor(time.Minute, want...)
}

// keys sends tmux key names (Enter, Space, Down, Escape, C-c, y, ...).
func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	s.Keys(keys...)
}

// typeLine types text literally and presses Enter (accessible mode).
func (s *tmuxSession) typeLine(text string) {
	s.t.Helper()
	s.TypeLine(text)
}

// outcome waits for the result file: the decisions, or aborted.
func (s *tmuxSession) outcome() (decs []review.Decision, aborted bool) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile(s.result)
		if err == nil {
			if string(data) == `"aborted"` {
				return nil, true
			}
			if err := json.Unmarshal(data, &decs); err != nil {
				s.t.Fatalf("result %s: %v", data, err)
			}
			return decs, false
		}
		time.Sleep(30 * time.Millisecond)
	}
	s.t.Fatalf("no result after 30s; screen:\n%s", s.screen())
	return nil, false
}

// Fixtures.

func numbered(n int, change map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if c, ok := change[i]; ok {
			b.WriteString(c + "\n")
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func textItem(path string, kind staging.Kind, old, new string) *review.Item {
	it := &review.Item{Path: path, Display: path, Kind: kind, Text: true, BaseText: old, GuestText: new}
	it.Hunks = udiff.Hunks(old, new)
	for _, h := range it.Hunks {
		for _, l := range h.Lines {
			switch l.Op {
			case udiff.Insert:
				it.Added++
			case udiff.Delete:
				it.Removed++
			}
		}
	}
	return it
}

// threeHunks is a file with 3 hunks far apart.
func threeHunks() *review.Item {
	old := numbered(40, nil)
	new := numbered(40, map[int]string{3: "changed three", 20: "changed twenty", 37: "changed thirty-seven"})
	return textItem("src/three.go", staging.Modified, old, new)
}

func oneHunk() *review.Item {
	return textItem("README.md", staging.Modified, "hello\nworld\n", "hello\nbrave new world\n")
}

func added() *review.Item {
	return textItem("docs/new.txt", staging.Added, "", "fresh\nfile\n")
}

func binary() *review.Item {
	return &review.Item{Path: "logo.png", Display: "logo.png", Kind: staging.Modified,
		Description: "binary file changed (1.2 KB → 1.4 KB)"}
}

func conflictItem() *review.Item {
	it := textItem("go.mod", staging.Modified, "module x\n\ngo 1.22\n", "module x\n\ngo 1.26\n")
	it.Conflict = true
	it.Description = "host: go 1.25"
	return it
}

func refusedItem() *review.Item {
	return &review.Item{Path: ".git/hooks/pre-commit", Display: ".git/hooks/pre-commit", Kind: staging.Added,
		Refused: "writes into .git are never applied"}
}

func basicChangeset() *review.Changeset {
	return &review.Changeset{Workdir: "/home/me/project", Items: []*review.Item{oneHunk(), added(), binary()}}
}

func wantDecisions(t *testing.T, got, want []review.Decision) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("decisions:\n got %s\nwant %s", g, w)
	}
}

func TestTUIAcceptAll(t *testing.T) {
	t.Parallel()
	s := startTUI(t, basicChangeset())
	s.waitFor("3 files changed", "M README.md  +1 −1", "A docs/new.txt  +2 −0", "M logo.png  binary file changed")
	s.keys("Enter")
	s.waitFor("Apply these changes?", "write README.md", "create docs/new.txt", "write logo.png")
	s.keys("y")
	decs, aborted := s.outcome()
	if aborted {
		t.Fatal("aborted")
	}
	wantDecisions(t, decs, []review.Decision{
		{Path: "README.md", Action: review.Accept},
		{Path: "docs/new.txt", Action: review.Accept},
		{Path: "logo.png", Action: review.Accept},
	})
}

// The network line (review's Notice) is on the screen where the person picks the files.
func TestTUINotice(t *testing.T) {
	t.Parallel()
	s := startTUI(t, basicChangeset(), "-notice", "Network policy none: the agent reached 0 hosts, 3 attempts blocked (last: evil.example:443).")
	s.waitFor("Network policy none: the agent reached 0 hosts, 3 attempts", "M README.md  +1 −1", "M logo.png")
	s.keys("Enter")
	s.waitFor("Apply these changes?")
	s.keys("y")
	if _, aborted := s.outcome(); aborted {
		t.Fatal("aborted")
	}
}

// The session's secrets' uses are on the screen where the person picks the files, under the
// network line; a session without secrets shows no such line.
func TestTUISecrets(t *testing.T) {
	t.Parallel()
	s := startTUI(t, basicChangeset(), "-notice", "Network policy allow:api.anthropic.com: the agent reached 1 host.",
		"-secrets", "ANTHROPIC_API_KEY used 212 times, only with api.anthropic.com", "-secrets", "OPENAI_API_KEY used 1 time, only with api.openai.com")
	scr := s.waitFor("Secrets: ANTHROPIC_API_KEY used 212 times, only with api.anthropic.com.", "Secrets: OPENAI_API_KEY used 1 time, only with api.openai.com.", "M README.md  +1 −1")
	network, secret := strings.Index(scr, "Network policy allow"), strings.Index(scr, "Secrets: ANTHROPIC_API_KEY")
	if network < 0 || secret < network || strings.Index(scr, "M README.md") < secret {
		t.Errorf("want the network line, then the secrets, then the files:\n%s", scr)
	}
	s.keys("Enter")
	s.waitFor("Apply these changes?")
	s.keys("y")
	if _, aborted := s.outcome(); aborted {
		t.Fatal("aborted")
	}

	none := startTUI(t, basicChangeset())
	if scr := none.waitFor("M README.md  +1 −1", "M logo.png"); strings.Contains(scr, "Secrets") {
		t.Errorf("a session without secrets shows:\n%s", scr)
	}
	none.keys("Escape")
	if _, aborted := none.outcome(); !aborted {
		t.Error("esc did not abort")
	}
}

// In accessible mode (which prints no field's description) the network line and the uses
// are over the list of files too.
func TestTUISecretsAccessible(t *testing.T) {
	t.Parallel()
	s := startTUIAt(t, 100, 40, "", basicChangeset(), "-accessible", "-notice", "Network policy none: the agent reached 0 hosts.",
		"-secrets", "ANTHROPIC_API_KEY used 212 times, only with api.anthropic.com")
	s.waitFor("Print the changes of every file first? [y/N]")
	s.typeLine("n")
	scr := s.waitFor("Network policy none: the agent reached 0 hosts.", "Secrets: ANTHROPIC_API_KEY used 212 times, only with api.anthropic.com.", "Enter a number between 0 and 3")
	network, secret := strings.Index(scr, "Network policy none"), strings.Index(scr, "Secrets: ANTHROPIC")
	if secret < network || strings.Index(scr, "M README.md") < secret {
		t.Errorf("want the network line, then the secrets, then the files:\n%s", scr)
	}
	s.typeLine("0")
	s.waitFor("Choose lines within any of these files?", "Enter a number between 0 and 1")
	s.typeLine("0")
	s.waitFor("Apply these changes? [y/N]")
	s.typeLine("y")
	if _, aborted := s.outcome(); aborted {
		t.Fatal("aborted")
	}
}

func TestTUIDeselectOne(t *testing.T) {
	t.Parallel()
	s := startTUI(t, basicChangeset())
	s.waitFor("> ✓ M README.md")
	s.keys("Down")
	s.waitFor("> ✓ A docs/new.txt")
	s.keys("Space")
	s.waitFor("> • A docs/new.txt")
	s.keys("Enter")
	s.waitFor("Also revert these rejected files in the guest?", "A docs/new.txt")
	s.keys("Enter")
	scr := s.waitFor("Apply these changes?", "left pending in the guest (1): docs/new.txt")
	if strings.Contains(scr, "create docs/new.txt") {
		t.Fatalf("deselected file in the plan:\n%s", scr)
	}
	s.keys("y")
	decs, aborted := s.outcome()
	if aborted {
		t.Fatal("aborted")
	}
	wantDecisions(t, decs, []review.Decision{
		{Path: "README.md", Action: review.Accept},
		{Path: "docs/new.txt", Action: review.Reject},
		{Path: "logo.png", Action: review.Accept},
	})
}

func TestTUIChooseHunks(t *testing.T) {
	t.Parallel()
	s := startTUI(t, &review.Changeset{Items: []*review.Item{threeHunks(), oneHunk()}})
	s.waitFor("M src/three.go  +3 −3 (3 hunks)", "M README.md  +1 −1")
	s.keys("Enter")
	s.waitFor("What should happen to this file?", "> accept all 3 hunks", "@@ -1,6 +1,6 @@")
	s.keys("Down")
	s.waitFor("> choose hunks one by one")
	s.keys("Enter")
	s.waitFor("Hunk 1 of 3", "-line 3", "+changed three", "Accept hunk 1 of 3?")
	// The diff is coloured: red deletions, green insertions, cyan hunk headers.
	esc := s.screenEsc()
	for _, want := range []string{"\x1b[31m-line 3", "\x1b[32m+changed three", "\x1b[36m@@ -1,6 +1,6 @@"} {
		if !strings.Contains(esc, want) {
			t.Errorf("screen lacks %q:\n%s", want, esc)
		}
	}
	s.keys("y")
	s.waitFor("Hunk 2 of 3", "+changed twenty")
	s.keys("n")
	s.waitFor("Hunk 3 of 3", "+changed thirty-seven")
	s.keys("y")
	s.waitFor("Apply these changes?", "write src/three.go (2 of 3 hunks)", "write README.md")
	s.keys("y")
	decs, aborted := s.outcome()
	if aborted {
		t.Fatal("aborted")
	}
	wantDecisions(t, decs, []review.Decision{
		{Path: "src/three.go", Action: review.Accept, Hunks: []bool{true, false, true}},
		{Path: "README.md", Action: review.Accept},
	})
}

func TestTUIConflictTakeGuest(t *testing.T) {
	t.Parallel()
	s := startTUI(t, &review.Changeset{Items: []*review.Item{oneHunk(), conflictItem()}})
	s.waitFor("1 conflict", "• C M go.mod  +1 −1")
	s.keys("Down", "Space")
	s.waitFor("> ✓ C M go.mod")
	s.keys("Enter")
	s.waitFor("Conflict: what should happen?", "host: go 1.25", "> skip", "+go 1.26")
	s.keys("Down", "Down")
	s.waitFor("> take the guest's version")
	s.keys("Enter")
	s.waitFor("Apply these changes?", "overwrite go.mod (conflict: take guest)")
	s.keys("y")
	decs, aborted := s.outcome()
	if aborted {
		t.Fatal("aborted")
	}
	wantDecisions(t, decs, []review.Decision{
		{Path: "README.md", Action: review.Accept},
		{Path: "go.mod", Action: review.TakeGuest},
	})
}

func TestTUICtrlCAborts(t *testing.T) {
	t.Parallel()
	s := startTUI(t, &review.Changeset{Items: []*review.Item{threeHunks(), oneHunk()}})
	s.waitFor("M src/three.go")
	s.keys("Enter")
	s.waitFor("What should happen to this file?")
	s.keys("Down", "Enter")
	s.waitFor("Hunk 1 of 3")
	s.keys("y")
	s.waitFor("Hunk 2 of 3")
	s.keys("C-c")
	if decs, aborted := s.outcome(); !aborted {
		t.Fatalf("not aborted: %+v", decs)
	}
}

func TestTUIEscAborts(t *testing.T) {
	t.Parallel()
	t.Run("file list", func(t *testing.T) {
		t.Parallel()
		s := startTUI(t, basicChangeset())
		s.waitFor("M README.md")
		s.keys("Escape")
		if decs, aborted := s.outcome(); !aborted {
			t.Fatalf("not aborted: %+v", decs)
		}
	})
	t.Run("confirmation", func(t *testing.T) {
		t.Parallel()
		s := startTUI(t, basicChangeset())
		s.waitFor("M README.md")
		s.keys("Enter")
		s.waitFor("Apply these changes?")
		s.keys("Escape")
		if decs, aborted := s.outcome(); !aborted {
			t.Fatalf("not aborted: %+v", decs)
		}
	})
	t.Run("diff view", func(t *testing.T) {
		t.Parallel()
		s := startTUI(t, basicChangeset())
		s.waitFor("M README.md")
		s.keys("v")
		s.waitFor("+brave new world", "q/enter: back")
		s.keys("Escape")
		if decs, aborted := s.outcome(); !aborted {
			t.Fatalf("not aborted: %+v", decs)
		}
	})
	t.Run("filter", func(t *testing.T) {
		// Esc first closes the file list's filter, then aborts.
		t.Parallel()
		s := startTUI(t, basicChangeset())
		s.waitFor("M README.md")
		s.keys("/")
		s.waitFor("/", "esc set filter")
		s.keys("l", "o", "g", "o")
		s.waitFor("/logo")
		s.keys("Escape")
		time.Sleep(300 * time.Millisecond) // make sure it did not quit
		if _, err := os.Stat(s.result); err == nil {
			t.Fatal("Esc closing the filter ended the review")
		}
		s.waitFor("M logo.png", "/ filter")
		s.keys("Escape")
		if decs, aborted := s.outcome(); !aborted {
			t.Fatalf("not aborted: %+v", decs)
		}
	})
}

func TestTUIDeclineConfirmation(t *testing.T) {
	t.Parallel()
	s := startTUI(t, basicChangeset())
	s.waitFor("M README.md")
	s.keys("Enter")
	s.waitFor("Apply these changes?", "Yes, apply", "No, abort")
	s.keys("Enter") // the default is No
	if decs, aborted := s.outcome(); !aborted {
		t.Fatalf("not aborted: %+v", decs)
	}
}

func TestTUIRefused(t *testing.T) {
	t.Parallel()
	cs := &review.Changeset{Items: []*review.Item{oneHunk(), refusedItem(), conflictItem()}}
	s := startTUI(t, cs)
	scr := s.waitFor("1 refused", "Refused (never applied)", ".git/hooks/pre-commit: writes into .git are never applied")
	// The refused item is not one of the options.
	if strings.Contains(scr, "A .git/hooks") {
		t.Fatalf("refused item is selectable:\n%s", scr)
	}
	s.keys("Enter")
	// An unselected conflict is skipped.
	s.waitFor("Apply these changes?", "write README.md", "left pending in the guest (1): go.mod")
	s.keys("y")
	decs, aborted := s.outcome()
	if aborted {
		t.Fatal("aborted")
	}
	wantDecisions(t, decs, []review.Decision{
		{Path: "README.md", Action: review.Accept},
		{Path: "go.mod", Action: review.Skip},
	})
}

// TestTUIHostileNames checks that control characters in a path (its Display, escaped by
// the changeset builder), a description, a refusal reason and file contents are shown
// escaped and never reach the terminal: the raw sequences would clear the screen and set
// the pane's title.
func TestTUIHostileNames(t *testing.T) {
	t.Parallel()
	evil := textItem("evil\x1b[2J\x1b]2;pwned\x07\nname.txt", staging.Added, "",
		"ok\n\x1b]2;pwned\x07\x1b[2Jclear\u202egnp.exe\n")
	evil.Display = `evil\x1b[2J\x1b]2;pwned\x07\nname.txt`
	bin := binary()
	bin.Description = "binary \x1b]2;pwned\x07 changed"
	ref := refusedItem()
	ref.Refused = "unsafe \x1b]2;pwned\x07 target"
	s := startTUI(t, &review.Changeset{Items: []*review.Item{evil, bin, ref}})
	s.waitFor(`A evil\x1b[2J\x1b]2;pwned\x07\nname.txt`, `binary \x1b]2;pwned\x07 changed`, `unsafe \x1b]2;pwned\x07 target`)
	s.keys("v")
	s.waitFor(`+\x1b]2;pwned\x07\x1b[2Jclear\u202egnp.exe`, "+ok")
	s.keys("q")
	s.waitFor("Files to accept")
	s.keys("Enter")
	s.waitFor("Apply these changes?", `create evil\x1b[2J\x1b]2;pwned\x07\nname.txt`)
	title, err := s.PaneTitle()
	if err != nil || strings.Contains(title, "pwned") {
		t.Fatalf("pane title %q (%v): an escape sequence reached the terminal", title, err)
	}
	s.keys("y")
	decs, aborted := s.outcome()
	if aborted {
		t.Fatal("aborted")
	}
	wantDecisions(t, decs, []review.Decision{
		{Path: evil.Path, Action: review.Accept},
		{Path: "logo.png", Action: review.Accept},
	})
}

func TestTUIDiffView(t *testing.T) {
	t.Parallel()
	s := startTUI(t, &review.Changeset{Items: []*review.Item{oneHunk(), threeHunks()}})
	s.waitFor("> ✓ M README.md")
	s.keys("Down", "v")
	s.waitFor("M src/three.go", "@@ -1,6 +1,6 @@", "1-22/26")
	s.keys("G")
	s.waitFor("+changed thirty-seven", "5-26/26")
	s.keys("k")
	s.waitFor("4-25/26")
	s.keys("q")
	// Back in the list, the cursor where it was.
	s.waitFor("> ✓ M src/three.go")
	s.keys("Enter")
	s.waitFor("What should happen to this file?")
	s.keys("Down", "Down")
	s.waitFor("> view the whole diff")
	s.keys("Enter")
	s.waitFor("@@ -17,7 +17,7 @@", "q/enter: back")
	s.keys("Enter")
	s.waitFor("What should happen to this file?", "> accept all 3 hunks")
	s.keys("Enter")
	s.waitFor("Apply these changes?", "write src/three.go")
	s.keys("y")
	decs, aborted := s.outcome()
	if aborted {
		t.Fatal("aborted")
	}
	wantDecisions(t, decs, []review.Decision{
		{Path: "README.md", Action: review.Accept},
		{Path: "src/three.go", Action: review.Accept},
	})
}

func TestTUIManyFiles(t *testing.T) {
	t.Parallel()
	cs := &review.Changeset{}
	for i := range 30 {
		it := textItem(fmt.Sprintf("dir/file%02d.go", i), staging.Modified, "a\n", "b\n")
		cs.Items = append(cs.Items, it)
	}
	cs.Items = append(cs.Items, refusedItem())
	s := startTUI(t, cs)
	// Everything fits in 24 lines: the list scrolls, the refused note and the help stay.
	scr := s.waitFor("31 files changed", "> ✓ M dir/file00.go", "Refused (never applied)", "enter continue")
	if n := len(strings.Split(strings.TrimRight(scr, "\n"), "\n")); n > 24 {
		t.Fatalf("%d lines", n)
	}
	s.keys("End")
	s.waitFor("> ✓ M dir/file29.go", "Refused (never applied)", "enter continue")
	s.keys("Space", "Enter")
	s.waitFor("Also revert these rejected files in the guest?")
	s.keys("Enter")
	s.waitFor("Apply these changes?", "write dir/file00.go", "more lines: press v to see everything")
	s.keys("v")
	s.waitFor("What will be done", "write dir/file00.go")
	s.keys("G")
	s.waitFor("write dir/file28.go", "left pending in the guest (1): dir/file29.go")
	s.keys("q")
	s.waitFor("Apply these changes?")
	s.keys("y")
	decs, aborted := s.outcome()
	if aborted || len(decs) != 30 || decs[29].Action != review.Reject || decs[0].Action != review.Accept {
		t.Fatalf("aborted %v, decisions %+v", aborted, decs)
	}
}

func TestTUIAccessible(t *testing.T) {
	t.Parallel()
	cs := &review.Changeset{Items: []*review.Item{threeHunks(), oneHunk(), conflictItem(), refusedItem()}}
	s := startTUI(t, cs, "-accessible")
	s.waitFor("Print the changes of every file first? [y/N]")
	s.typeLine("n")
	s.waitFor("Refused (never applied)", ".git/hooks/pre-commit: writes into .git are never applied",
		"1. ✓ M src/three.go", "3.   C M go.mod", "0.   Confirm selection", "Enter a number between 0 and 3")
	s.typeLine("3") // select the conflict
	s.waitFor("3. ✓ C M go.mod")
	s.typeLine("0")
	// README.md has one hunk: its lines could be chosen (none are here).
	s.waitFor("Choose lines within any of these files?", "1.   M README.md  +1 −1")
	s.typeLine("0")
	s.waitFor("[1/3] M src/three.go", "2. choose hunks one by one", "Enter a number between 1 and 5")
	s.typeLine("2")
	s.waitFor("Hunk 1 of 3", "+changed three", "Hunk 1 of 3: what should happen?", "3. choose its lines one by one")
	s.typeLine("1")
	s.waitFor("Hunk 2 of 3: what should happen?")
	s.typeLine("2")
	s.waitFor("Hunk 3 of 3: what should happen?")
	s.typeLine("") // the default: accept
	s.waitFor("Conflict: what should happen?", "3. take the guest's version")
	s.typeLine("3")
	s.waitFor("write src/three.go (2 of 3 hunks)", "overwrite go.mod (conflict: take guest)", "Apply these changes? [y/N]")
	s.typeLine("y")
	decs, aborted := s.outcome()
	if aborted {
		t.Fatal("aborted")
	}
	wantDecisions(t, decs, []review.Decision{
		{Path: "src/three.go", Action: review.Accept, Hunks: []bool{true, false, true}},
		{Path: "README.md", Action: review.Accept},
		{Path: "go.mod", Action: review.TakeGuest},
	})
}

func TestTUIAccessibleAborts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		keys []string
	}{
		{"esc", []string{"Escape", "Enter"}},
		{"ctrl-c", []string{"C-c"}},
		{"ctrl-d", []string{"C-d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startTUI(t, basicChangeset(), "-accessible")
			s.waitFor("Print the changes of every file first? [y/N]")
			s.typeLine("n")
			s.waitFor("Enter a number between 0 and 3")
			s.keys(tc.keys...)
			if decs, aborted := s.outcome(); !aborted {
				t.Fatalf("not aborted: %+v", decs)
			}
		})
	}
}

// Unit tests of the text handling.

func TestTUISanitize(t *testing.T) {
	for in, want := range map[string]string{
		"plain/path.go":       "plain/path.go",
		"a\x1b[31mb":          `a\x1b[31mb`,
		"new\nline\r":         `new\nline\r`,
		"tab\there":           `tab\there`,
		"bidi\u202eevil":      `bidi\u202eevil`,
		"zero\u200bwidth":     `zero\u200bwidth`,
		"c1\u009bx":           `c1\u009bx`,
		"bad\xffutf8":         `bad\xffutf8`,
		"del\x7f":             `del\x7f`,
		"ünïcødé 日本":          "ünïcødé 日本",
		`already\x1b escaped`: `already\x1b escaped`,
	} {
		if got := termsafe.String(in); got != want {
			t.Errorf("termsafe.String(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTUIWrapKeepsEverything(t *testing.T) {
	p := &painter{plain: true}
	long := strings.Repeat("0123456789", 20) + "\ttab\x1b" + strings.Repeat("日本", 30)
	h := udiff.Hunks("", long+"\n")[0]
	lines := p.hunkLines(h, 40)
	var joined strings.Builder
	for i, l := range lines {
		if w := runewidthOf(l); w > 40 {
			t.Errorf("line %d is %d cells wide: %q", i, w, l)
		}
		switch {
		case i == 0:
			if l != "@@ -0,0 +1 @@" {
				t.Errorf("header %q", l)
			}
			continue
		case i == 1:
			l = strings.TrimPrefix(l, "+")
		default:
			l = strings.TrimPrefix(l, "↪")
		}
		joined.WriteString(l)
	}
	want := strings.Repeat("0123456789", 20) + "    tab" + `\x1b` + strings.Repeat("日本", 30)
	if joined.String() != want {
		t.Fatalf("wrapped text lost something:\n got %q\nwant %q", joined.String(), want)
	}
}

func TestTUIPlan(t *testing.T) {
	mode := &review.Item{Path: "run.sh", Display: "run.sh", Kind: staging.ModeChanged,
		Base: &tree.Entry{Type: "file", Mode: 0o644}, Guest: &tree.Entry{Type: "file", Mode: 0o755}}
	del := &review.Item{Path: "old.txt", Display: "old.txt", Kind: staging.Deleted, Base: &tree.Entry{Type: "file", Mode: 0o644}}
	link := &review.Item{Path: "l", Display: "l", Kind: staging.LinkChanged,
		Base: &tree.Entry{Type: "symlink", Target: "a"}, Guest: &tree.Entry{Type: "symlink", Target: "b\x1b"}}
	three := threeHunks()
	items := []*review.Item{mode, del, link, three, oneHunk(), conflictItem(), oneHunk()}
	decs := []review.Decision{
		{Action: review.Accept}, {Action: review.Accept}, {Action: review.Accept},
		{Action: review.Accept, Hunks: []bool{true, false, true}},
		{Action: review.RejectRevert}, {Action: review.KeepHost}, {Action: review.Reject},
	}
	for i := range decs {
		decs[i].Path = items[i].Path
	}
	r := &reviewer{cs: &review.Changeset{Items: items}}
	do, left, err := r.planLines(decs)
	if err != nil {
		t.Fatal(err)
	}
	wantDo := []string{
		"chmod run.sh 755",
		"delete old.txt",
		`relink l → b\x1b`,
		"write src/three.go (2 of 3 hunks)",
		"revert in guest: README.md",
		"keep host: go.mod (copied into the guest)",
	}
	if !reflect.DeepEqual(do, wantDo) || !reflect.DeepEqual(left, []string{"README.md"}) {
		t.Fatalf("plan:\n%q\n%q", do, left)
	}
	if got := label(mode); got != "mode run.sh (644 → 755)" {
		t.Errorf("label = %q", got)
	}
}

func runewidthOf(s string) int { return runewidth.StringWidth(s) }

func TestTUINothingToReview(t *testing.T) {
	var out strings.Builder
	decs, err := Run(&review.Changeset{}, strings.NewReader(""), &out, Options{})
	if err != nil || len(decs) != 0 || out.Len() != 0 {
		t.Fatalf("decisions %+v, err %v, output %q", decs, err, out.String())
	}
}

func TestTUIOnlyRefused(t *testing.T) {
	t.Parallel()
	s := startTUI(t, &review.Changeset{Items: []*review.Item{refusedItem()}})
	s.waitFor("1 refused", ".git/hooks/pre-commit: writes into .git are never applied", "Nothing can be applied.")
	s.keys("Enter")
	decs, aborted := s.outcome()
	if aborted || len(decs) != 0 {
		t.Fatalf("aborted %v, decisions %+v", aborted, decs)
	}
}

func TestTUIRejectAndRevert(t *testing.T) {
	t.Parallel()
	s := startTUI(t, basicChangeset())
	s.waitFor("> ✓ M README.md")
	s.keys("Space")
	s.waitFor("> • M README.md")
	s.keys("Enter")
	// Where the person chooses to revert, and in the confirmation, the TUI says it is
	// permanent (issue 12, item 6).
	s.waitFor("Also revert these rejected files in the guest?", "M README.md", "Permanent: the agent's version is lost (--undo cannot bring it back).")
	s.keys("Space")
	s.keys("Enter")
	s.waitFor("Apply these changes?", "revert in guest: README.md", "Reverting in the guest is permanent: the agent's version is lost")
	s.keys("y")
	decs, aborted := s.outcome()
	if aborted {
		t.Fatal("aborted")
	}
	wantDecisions(t, decs, []review.Decision{
		{Path: "README.md", Action: review.RejectRevert},
		{Path: "docs/new.txt", Action: review.Accept},
		{Path: "logo.png", Action: review.Accept},
	})
}

// The per-file choice to revert says it is permanent, and so does the confirmation.
func TestTUIPerFileRevertIsPermanent(t *testing.T) {
	t.Parallel()
	s := startTUI(t, &review.Changeset{Items: []*review.Item{threeHunks(), oneHunk()}})
	s.waitFor("M src/three.go  +3 −3 (3 hunks)")
	s.keys("Enter")
	s.waitFor("What should happen to this file?", "reject and revert it in the guest (permanent: no undo)")
	s.keys("Down", "Down", "Down", "Down")
	s.waitFor("> reject and revert it in the guest (permanent: no undo)")
	s.keys("Enter")
	s.waitFor("Apply these changes?", "revert in guest: src/three.go", "Reverting in the guest is permanent: the agent's version is lost")
	s.keys("y")
	decs, aborted := s.outcome()
	if aborted {
		t.Fatal("aborted")
	}
	wantDecisions(t, decs, []review.Decision{
		{Path: "src/three.go", Action: review.RejectRevert},
		{Path: "README.md", Action: review.Accept},
	})
}

// The file list's description and huh's help line under it say the same keys in the same
// words (they said "space: toggle · enter: continue" and "x toggle • enter submit").
func TestTUIHelpLinesAgree(t *testing.T) {
	t.Parallel()
	s := startTUI(t, basicChangeset())
	scr := s.waitFor("space: toggle · v: view diff · enter: continue · esc: abort", "space toggle", "enter continue")
	for _, bad := range []string{"x toggle", "enter submit", "enter confirm"} {
		if strings.Contains(scr, bad) {
			t.Errorf("the help says %q:\n%s", bad, scr)
		}
	}
	s.keys("C-c")
	if _, aborted := s.outcome(); !aborted {
		t.Fatal("not aborted")
	}
}

// foldedChangeset is a review on a host directory that does not tell case apart: a rename
// that only changes case (main.go → Main.go) and a collision (README.md and readme.md).
func foldedChangeset() *review.Changeset {
	file := &tree.Entry{Type: tree.File, Mode: 0o644, Size: 5, Hash: "h-main"}
	from := &review.Item{Path: "main.go", Display: "main.go", Kind: staging.Deleted, Base: file, Host: file}
	rename := &review.Item{Path: "Main.go", Display: "Main.go", Kind: staging.Added, Guest: file, Host: file, From: from,
		Description: "renamed from main.go (only case or Unicode normalization differs)"}
	a := textItem("README.md", staging.Added, "", "A\n")
	a.Conflict, a.Collides = true, []string{"readme.md"}
	a.Guest = &tree.Entry{Type: tree.File, Mode: 0o644, Size: 2, Hash: "h-A"}
	b := textItem("readme.md", staging.Added, "", "a\n")
	b.Conflict, b.Collides = true, []string{"README.md"}
	b.Guest = &tree.Entry{Type: tree.File, Mode: 0o644, Size: 2, Hash: "h-a"}
	return &review.Changeset{Workdir: "/Users/me/project", Rule: review.NameRule{FoldCase: true, Normalize: true},
		Items: []*review.Item{rename, a, b}}
}

// A rename is one line (R old → new), accepted like any change; the names of a collision are
// settled by one question, of which the person takes at most one: the others stay pending.
func TestTUICollision(t *testing.T) {
	t.Parallel()
	s := startTUI(t, foldedChangeset())
	s.waitFor("2 conflicts", "R main.go → Main.go", "C A README.md", "C A readme.md")
	s.keys("Down", "Space")
	s.waitFor("> ✓ C A README.md")
	s.keys("Enter")
	s.waitFor("Collision: which one should the host get?", "> skip: take none of them", "take README.md", "take readme.md",
		"README.md and readme.md are one name on this host directory")
	s.keys("Down", "Down")
	s.waitFor("> take readme.md")
	s.keys("Enter")
	s.waitFor("Apply these changes?", "rename main.go → Main.go", "create readme.md (collision: README.md stays pending")
	s.keys("y")
	decs, aborted := s.outcome()
	if aborted {
		t.Fatal("aborted")
	}
	wantDecisions(t, decs, []review.Decision{
		{Path: "Main.go", Action: review.Accept},
		{Path: "README.md", Action: review.Skip},
		{Path: "readme.md", Action: review.TakeGuest},
	})
}

// The same in accessible mode, with the rename a conflict (the host changed main.go): it is
// offered skip or take-guest, never keep-host.
func TestTUICollisionAccessible(t *testing.T) {
	t.Parallel()
	cs := foldedChangeset()
	rename := cs.Items[0]
	rename.Conflict = true
	rename.Host = &tree.Entry{Type: tree.File, Mode: 0o644, Size: 9, Hash: "h-host"}
	s := startTUI(t, cs, "-accessible")
	s.waitFor("Print the changes of every file first? [y/N]")
	s.typeLine("n")
	s.waitFor("1.   C R main.go → Main.go", "2.   C A README.md", "3.   C A readme.md")
	s.typeLine("1")
	s.typeLine("3")
	s.typeLine("0")
	s.waitFor("Conflict: what should happen?", "1. skip", "2. take the guest's version (rename main.go and overwrite it)")
	if strings.Contains(s.screen(), "keep the host's version") {
		t.Errorf("keep-host offered for a rename:\n%s", s.screen())
	}
	s.typeLine("2")
	s.waitFor("Collision: which one should the host get?", "2. take README.md", "3. take readme.md")
	s.typeLine("2")
	s.waitFor("rename main.go → Main.go", "create README.md (collision: readme.md stays pending", "Apply these changes? [y/N]")
	s.typeLine("y")
	decs, aborted := s.outcome()
	if aborted {
		t.Fatal("aborted")
	}
	wantDecisions(t, decs, []review.Decision{
		{Path: "Main.go", Action: review.TakeGuest},
		{Path: "README.md", Action: review.TakeGuest},
		{Path: "readme.md", Action: review.Skip},
	})
}
