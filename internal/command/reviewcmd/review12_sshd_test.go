package reviewcmd_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/exitcode"
	"github.com/limactl-mcp/limactl-mcp/internal/command/reviewcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// A review run in a subdirectory of the staged project reviews the project's session and says
// so; PATH arguments are taken from the current directory. Run in a parent of the project, it
// names the sessions below and the command that reviews each, and never suggests `serve` (which
// would stage the parent as a second session).
func TestReviewFromSubdirectoryAndParent(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n", "sub/x.txt": "x\n"})
	f.Guest("echo a2 > a.txt && echo x2 > sub/x.txt")
	sub := filepath.Join(f.Workdir, "sub")

	r := run(t, f, reviewcmd.Options{Workdir: sub, DryRun: true}, false)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if want := "Reviewing " + f.Workdir + " (the staged project that holds " + sub + "), instance sshd-test.\n"; r.errOut != want {
		t.Errorf("stderr %q, want %q", r.errOut, want)
	}
	wantLines(t, "stdout", r.out, "  M a.txt  +1 −1\n", "  M sub/x.txt  +1 −1\n")
	// On a terminal, the progress line says it.
	abort := func(*review.Changeset) ([]review.Decision, error) { return nil, reviewcmd.ErrAborted }
	r = run(t, f, reviewcmd.Options{Workdir: sub, Decide: abort}, true)
	if want := "Connecting to sshd-test… reading the agent's changes to " + f.Workdir + " (the staged project that holds " + sub + ")…\n"; !strings.HasPrefix(r.errOut, want) {
		t.Errorf("stderr on a terminal %q, want it to begin with %q", r.errOut, want)
	}

	// A relative PATH is taken from the current directory (sub), not from the project.
	wd, _ := os.Getwd()
	if err := os.Chdir(sub); err != nil {
		t.Fatal(err)
	}
	r = run(t, f, reviewcmd.Options{Workdir: sub, Paths: []string{"x.txt"}, Patch: true}, false)
	_ = os.Chdir(wd)
	if r.err != nil || !strings.Contains(r.out, "+++ b/sub/x.txt\n") || strings.Contains(r.out, "a.txt") {
		t.Errorf("--patch x.txt from sub: error %v\n%s", r.err, r.out)
	}

	parent := filepath.Dir(f.Workdir)
	r = run(t, f, reviewcmd.Options{Workdir: parent, Yes: true}, false)
	want := parent + ` has no staged session of its own in instance "sshd-test", but ` + f.Workdir + ", below it, has one: review it with `limactl mcp review sshd-test --workdir " + f.Workdir + "`"
	if r.err == nil || r.err.Error() != want || exitcode.Of(r.err) != exitcode.Error {
		t.Errorf("from the parent: %v\nwant %s", r.err, want)
	}

	// Two sessions below: both listed, one command each.
	other := filepath.Join(parent, "other proj")
	if err := f.Store.Save(&staging.State{ID: staging.SessionID(other), Instance: sessiontest.Instance, Workdir: other}, &staging.Manifest{}); err != nil {
		t.Fatal(err)
	}
	r = run(t, f, reviewcmd.Options{Workdir: parent, Yes: true}, false)
	want = parent + ` has no staged session of its own in instance "sshd-test", but 2 directories below it have one; review one of them with:` +
		"\n  limactl mcp review sshd-test --workdir '" + other + "'" +
		"\n  limactl mcp review sshd-test --workdir " + f.Workdir
	if r.err == nil || r.err.Error() != want {
		t.Errorf("from the parent, two sessions: %v\nwant %s", r.err, want)
	}
	if strings.Contains(r.err.Error(), "serve") {
		t.Errorf("suggests serve: %v", r.err)
	}
	if f.ReadHost("a.txt") != "a\n" {
		t.Error("the host changed")
	}
}

// Two reviews at once: the second is refused at once with the holder's pid and what to do,
// and writes nothing; once the first is done the lock is free. An apply that changes nothing
// says so and records no undo step, so --undo still undoes the last real apply. A lock file
// whose holder is gone does not stand in the way.
func TestReviewConcurrent(t *testing.T) {
	f := newChanges(t)
	deciding, release := make(chan struct{}), make(chan struct{})
	first := make(chan result, 1)
	go func() {
		acceptA := func(*review.Changeset) ([]review.Decision, error) {
			close(deciding)
			<-release
			return []review.Decision{{Path: "a.txt", Action: review.Accept}}, nil
		}
		first <- run(t, f, reviewcmd.Options{Decide: acceptA}, true)
	}()
	<-deciding

	for _, opts := range []reviewcmd.Options{{Yes: true}, {Undo: true}} {
		r := run(t, f, opts, false)
		want := fmt.Sprintf("another review (pid %d) is open on %s: nothing was applied. Finish or abort that review first (if that review is stuck, end it with `kill %d`), then run `limactl mcp review sshd-test` again", os.Getpid(), f.Workdir, os.Getpid())
		if r.err == nil || r.err.Error() != want || exitcode.Of(r.err) != exitcode.Error {
			t.Errorf("second review %+v: %v\nwant %s", opts, r.err, want)
		}
		if r.out != "" {
			t.Errorf("second review %+v printed %q", opts, r.out)
		}
	}
	// Reading the changeset needs no lock.
	if r := run(t, f, reviewcmd.Options{JSON: true}, false); r.err != nil {
		t.Errorf("--json during a review: %v", r.err)
	}
	hostUntouched(t, f)

	close(release)
	r := <-first
	if r.err != nil || !strings.HasPrefix(r.out, "Applied: 1 path written on the host.") {
		t.Fatalf("first review: %v\n%s", r.err, r.out)
	}

	// A lock file left by a process that is gone: the next review goes ahead.
	lock := filepath.Join(f.Store.Dir, "sessions", staging.SessionID(f.Workdir), "review.lock")
	if err := os.WriteFile(lock, []byte("999999999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	skipAll := func(cs *review.Changeset) ([]review.Decision, error) {
		var ds []review.Decision
		for _, it := range cs.Items {
			a := review.Reject
			if it.Conflict {
				a = review.Skip
			}
			ds = append(ds, review.Decision{Path: it.Path, Action: a})
		}
		return ds, nil
	}
	r = run(t, f, reviewcmd.Options{Decide: skipAll}, true)
	if r.err != nil || r.out != "Nothing was applied: the host and the guest are as they were; 2 changes stay pending.\n" {
		t.Errorf("an apply of nothing: %v\nstdout %q", r.err, r.out)
	}
	r = run(t, f, reviewcmd.Options{Undo: true}, false)
	if r.err != nil || r.out != "Restored 1 path from the last apply:\n  restored a.txt\n" {
		t.Errorf("--undo after an empty apply: %v\nstdout %q", r.err, r.out)
	}
	hostUntouched(t, f)
}

// --json has the schema of docs/review-json.md: snake_case keys, lists never null, and the
// whole output as pinned here (the workdir aside). A change here is a change of the schema:
// update the document, and bump schema_version if a script could misread the new output.
func TestReviewJSONSchema(t *testing.T) {
	f := newChanges(t)
	r := run(t, f, reviewcmd.Options{JSON: true}, false)
	if r.err != nil {
		t.Fatal(r.err)
	}
	got := strings.ReplaceAll(r.out, f.Workdir, "WORKDIR")
	want := `{
  "schema_version": 1,
  "workdir": "WORKDIR",
  "summary": {
    "files": 3,
    "conflicts": 1,
    "refused": 0,
    "lines_added": 3,
    "lines_removed": 2
  },
  "items": [
    {
      "path": "a.txt",
      "kind": "modified",
      "description": "modified",
      "lines_added": 1,
      "lines_removed": 1,
      "hunks": 1
    },
    {
      "path": "c.txt",
      "kind": "modified",
      "conflict": true,
      "description": "modified; CONFLICT: the host changed it too since it was staged",
      "lines_added": 1,
      "lines_removed": 1,
      "hunks": 1
    },
    {
      "path": "new.txt",
      "kind": "added",
      "description": "added file of 4 bytes (mode 644)",
      "lines_added": 1,
      "lines_removed": 0,
      "hunks": 1
    }
  ],
  "ignored": [],
  "network": {
    "policy": "open"
  }
}
`
	if got != want {
		t.Errorf("--json:\n%s\nwant:\n%s", got, want)
	}

	// Nothing to review: empty lists, not null.
	g := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	r = run(t, g, reviewcmd.Options{JSON: true}, false)
	if r.err != nil || !strings.Contains(r.out, `"items": [],`) || !strings.Contains(r.out, `"ignored": []`) {
		t.Errorf("--json of nothing: %v\n%s", r.err, r.out)
	}

	// Every key the output can have is documented.
	docText, err := os.ReadFile("../../../docs/review-json.md")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(r.out), &v); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{"refused": true, "conflict": true, "b64": true, "renamed_from": true, "collides_with": true, "session": true}
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for k, y := range x {
				keys[k] = true
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	var full map[string]any
	if err := json.Unmarshal([]byte(want), &full); err != nil {
		t.Fatal(err)
	}
	walk(v)
	walk(full)
	var missing []string
	for k := range keys {
		if !strings.Contains(string(docText), "`"+k+"`") {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs/review-json.md does not document %q", missing)
	}
}

// An apply that only reverts in the guest says what it did and offers no undo: nothing on the
// host changed, and the revert itself is permanent.
func TestReviewRevertOnlyOffersNoUndo(t *testing.T) {
	f := newChanges(t)
	revertA := func(cs *review.Changeset) ([]review.Decision, error) {
		return []review.Decision{{Path: "a.txt", Action: review.RejectRevert}}, nil
	}
	r := run(t, f, reviewcmd.Options{Decide: revertA}, true)
	if r.err != nil || r.out != "Applied: 0 paths written on the host, 1 set in the guest. Nothing on the host changed, so there is nothing to undo.\n  guest   a.txt\n" {
		t.Errorf("error %v, stdout %q", r.err, r.out)
	}
	if got := f.Guest("cat a.txt"); got != "a\n" {
		t.Errorf("a.txt in the guest: %q", got)
	}
	r = run(t, f, reviewcmd.Options{Undo: true}, false)
	if r.err == nil || !strings.Contains(r.err.Error(), "there is no apply to undo") {
		t.Errorf("--undo after a revert: %v, stdout %q", r.err, r.out)
	}
	hostUntouched(t, f)
}
