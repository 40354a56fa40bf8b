package reviewcmd_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/screenshot"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/tmuxtest"
)

// screensFetch is net/fetch.go of the compare's screens, as the host has it.
const screensFetch = `package net

import "time"

// get fetches the page, waiting at most the timeout.
func get(url string) error {
	return fetch(url, timeout)
}

func fetch(url string, d time.Duration) error {
	if d <= 0 {
		return errTimeout
	}
	return nil
}
`

// screensFetchTest is the net/fetch_test.go that try1 and try3 add.
const screensFetchTest = `package net

import "testing"

func TestFetchWithoutTime(t *testing.T) {
	if err := fetch("http://example.com", 0); err != errTimeout {
		t.Fatalf("fetch with no time: %v", err)
	}
}
`

// screensWorkdir is the working directory the screens show in place of the test's temporary one.
const screensWorkdir = "/home/me/project"

// TestReviewScreensCompare makes the compare's screens of docs/review-screens (the review's
// others are internal/review/tui's TestReviewScreens; internal/testutil/screenshot says how to
// run both): the real `review --compare` on forks on a real sshd, in tmux. Three "agents"
// edit net/fetch.go: try1 the comment and the call, try2 the check, try3 the call otherwise;
// try1 and try3 add the same test, try2 edits README.md. On 200 columns three sessions'
// versions are side by side (and the compare is left); on 80 columns two sessions' versions
// come one after another, a hunk of each is taken, the confirmation lists the merge, and the
// host ends as picked.
func TestReviewScreensCompare(t *testing.T) {
	shots := screenshot.New(t, "limactl mcp review --compare: ")
	addTest := "mkdir -p net && cat > net/fetch_test.go <<'EOF'\n" + screensFetchTest + "EOF\n"
	f, _ := forkFixture(t, map[string]string{"net/fetch.go": screensFetch, "README.md": "# net\n\nFetches pages.\n"},
		"sed -i 's/at most the timeout/until the deadline/; s/url, timeout)/url, deadline)/' net/fetch.go && "+addTest,
		"sed -i 's/d <= 0/d < time.Millisecond/' net/fetch.go && sed -i 's/^Fetches pages\\.$/Fetches pages, giving up after a timeout./' README.md",
		"sed -i 's/url, timeout)/url, 2*timeout)/' net/fetch.go && "+addTest)
	// The confirmation names the working directory: the screens show one that does not change
	// from run to run, and none may show the temporary one (a path wrapped across lines).
	save := func(s *tmuxtest.Session, name, title string) {
		t.Helper()
		scr := strings.ReplaceAll(s.ScreenEsc(), f.Workdir, screensWorkdir)
		if strings.Contains(scr, filepath.Base(filepath.Dir(filepath.Dir(f.Workdir)))) {
			t.Fatalf("the screen %s shows the test's temporary directory:\n%s", name, scr)
		}
		shots.Save(name, title, scr)
	}
	const wait = time.Minute

	// Three sessions on 200 columns: net/fetch.go's three versions side by side.
	s := startCompare(t, f, 200, 50, "try1,try2,try3")
	s.WaitFor(wait, "[1/3] README.md · compare")
	s.Keys("Down", "Enter")
	scr := s.WaitFor(wait, "[2/3] net/fetch.go · compare", "3 versions", "2*timeout", "── C: try3")
	sideBySide := false
	for _, l := range strings.Split(scr, "\n") {
		sideBySide = sideBySide || strings.Contains(l, "A: try1") && strings.Contains(l, "B: try2") && strings.Contains(l, "C: try3") && strings.Contains(l, "│")
	}
	if !sideBySide {
		t.Errorf("the versions of net/fetch.go are not side by side on 200 columns:\n%s", scr)
	}
	save(s, "compare-side-by-side", "the versions side by side (200 columns)")
	s.Keys("Escape")
	s.WaitFor(wait, "Aborted: nothing was applied", "review failed")

	// Two sessions on 80 columns: README.md (try2's only) left, net/fetch.go's versions one
	// after another, a hunk of each taken; net/fetch_test.go (try1's only) taken.
	s = startCompare(t, f, 80, 50, "try1,try2")
	s.WaitFor(wait, "[1/3] README.md · compare", "changed by try2 only")
	s.Keys("Down", "Enter") // take none
	scr = s.WaitFor(wait, "[2/3] net/fetch.go · compare", "2 versions", "── A: try1", "+// get fetches the page, waiting until the deadline.", "── B: try2", "+    if d < time.Millisecond {")
	for _, l := range strings.Split(scr, "\n") {
		if strings.Contains(l, "A: try1") && strings.Contains(l, "B: try2") {
			t.Errorf("side by side on 80 columns:\n%s", scr)
		}
	}
	save(s, "compare", "the versions one after another (80 columns)")
	s.Keys("Down", "Down", "Enter") // choose hunks of each session
	s.WaitFor(wait, "Take hunk 1 of 1 of try1?")
	s.Keys("y")
	s.WaitFor(wait, "Take hunk 1 of 1 of try2?", "+    if d < time.Millisecond {")
	save(s, "compare-hunks", "a hunk of a session")
	s.Keys("y")
	s.WaitFor(wait, "[3/3] net/fetch_test.go · compare", "changed by try1 only")
	s.Keys("Enter") // take A: try1
	s.WaitFor(wait, "Apply these changes?", "write net/fetch.go (from try1 and try2)", "create net/fetch_test.go (from try1)",
		"left pending in every session (1): README.md", "Applied through session try1")
	save(s, "compare-confirm", "the confirmation")
	s.Keys("y")
	s.WaitFor(wait, "Applied: 2 paths written on the host, through session try1", "review done")
	want := strings.NewReplacer("at most the timeout", "until the deadline", "url, timeout)", "url, deadline)", "d <= 0", "d < time.Millisecond").Replace(screensFetch)
	if got := f.ReadHost("net/fetch.go"); got != want {
		t.Errorf("net/fetch.go on the host:\n%s\nwant\n%s", got, want)
	}
	if f.ReadHost("net/fetch_test.go") != screensFetchTest || f.ReadHost("README.md") != "# net\n\nFetches pages.\n" {
		t.Errorf("host: net/fetch_test.go %q, README.md %q", f.ReadHost("net/fetch_test.go"), f.ReadHost("README.md"))
	}
}
