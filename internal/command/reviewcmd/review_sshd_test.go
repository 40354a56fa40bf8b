package reviewcmd_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/exitcode"
	"github.com/limactl-mcp/limactl-mcp/internal/command/reviewcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// newChanges stages a.txt, c.txt and keep.txt; then the agent edits a.txt and c.txt and adds
// new.txt, and the host edits c.txt too (a conflict).
func newChanges(t *testing.T) *sessiontest.Fixture {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n", "c.txt": "c\n", "keep.txt": "keep\n"})
	f.Guest("echo a2 > a.txt && echo guest > c.txt && echo new > new.txt")
	f.WriteHost("c.txt", "host\n")
	return f
}

type result struct {
	out, errOut string
	err         error
}

// run runs a review of f's session with opts (in f.Workdir unless opts.Workdir is set), on
// a terminal if tty.
func run(t *testing.T, f *sessiontest.Fixture, opts reviewcmd.Options, tty bool) result {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	ios.SetTTY(tty, tty)
	opts.IO, opts.Instance, opts.Open = ios, sessiontest.Instance, f.Opener()
	if opts.Workdir == "" {
		opts.Workdir = f.Workdir
	}
	err := reviewcmd.Run(context.Background(), &opts)
	return result{out.String(), errOut.String(), err}
}

// hostUntouched checks that the host still has what it had before any review.
func hostUntouched(t *testing.T, f *sessiontest.Fixture) {
	t.Helper()
	if a, c, n := f.ReadHost("a.txt"), f.ReadHost("c.txt"), f.ReadHost("new.txt"); a != "a\n" || c != "host\n" || n != "<missing>" {
		t.Errorf("the host changed: a.txt %q, c.txt %q, new.txt %q", a, c, n)
	}
}

func wantLines(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

// Without a terminal and without --yes, a review applies nothing and exits with the
// "consent pending" code, having said why on stdout.
func TestReviewWithoutTerminalAppliesNothing(t *testing.T) {
	f := newChanges(t)
	r := run(t, f, reviewcmd.Options{}, false)
	if exitcode.Of(r.err) != exitcode.Pending || !errors.Is(r.err, exitcode.ErrSilent) {
		t.Fatalf("error %v (exit code %d), want a silent exit %d", r.err, exitcode.Of(r.err), exitcode.Pending)
	}
	wantLines(t, "stdout", r.out,
		"3 files changed by the agent (+3 −2 lines), 1 conflict, 0 refused:\n",
		"  M a.txt  +1 −1\n", "  C c.txt  +1 −1  (modified; CONFLICT", "  A new.txt  +1 −0  (added file",
		// The hint keeps the instance name (issue 12, item 4: it was `limactl mcp review`).
		"\nNo terminal: nothing was applied. Run `limactl mcp review sshd-test` in a terminal, or `limactl mcp review sshd-test --yes` to apply every change that is not a conflict")
	if r.errOut != "" {
		t.Errorf("stderr: %q", r.errOut)
	}
	hostUntouched(t, f)
}

// --dry-run shows what --yes would do (every change but the conflict) and writes nothing.
func TestReviewDryRun(t *testing.T) {
	f := newChanges(t)
	r := run(t, f, reviewcmd.Options{DryRun: true}, false)
	if r.err != nil {
		t.Fatal(r.err)
	}
	i := strings.Index(r.out, "\nWith --yes, this would:\n")
	if i < 0 {
		t.Fatalf("no plan:\n%s", r.out)
	}
	want := "\nWith --yes, this would:\n" +
		fmt.Sprintf("  %-40s %s\n", "a.txt", "write") +
		fmt.Sprintf("  %-40s %s\n", "new.txt", "write") +
		fmt.Sprintf("  %-40s %s\n", "c.txt", "leave pending in the guest") +
		"  conflict (not applied): c.txt — the host changed it too; review it in a terminal to choose\n"
	if plan := r.out[i:]; plan != want {
		t.Errorf("the plan:\n%s\nwant:\n%s", plan, want)
	}
	hostUntouched(t, f)
}

// --yes applies every change that is not a conflict, lists the conflict, and --undo restores
// what it overwrote.
func TestReviewYesThenUndo(t *testing.T) {
	f := newChanges(t)
	r := run(t, f, reviewcmd.Options{Yes: true}, false)
	if r.err != nil {
		t.Fatalf("%v\nstderr: %s", r.err, r.errOut)
	}
	if !strings.HasPrefix(r.out, "Applied: 2 paths written on the host. Undo with `limactl mcp review sshd-test --undo`.\n") {
		t.Errorf("stdout:\n%s", r.out)
	}
	wantLines(t, "stdout", r.out, "  wrote   a.txt\n", "  wrote   new.txt\n", "  conflict (not applied): c.txt — the host changed it too")
	if a, c, n := f.ReadHost("a.txt"), f.ReadHost("c.txt"), f.ReadHost("new.txt"); a != "a2\n" || c != "host\n" || n != "new\n" {
		t.Errorf("after --yes: a.txt %q, c.txt %q, new.txt %q", a, c, n)
	}

	// What is left is the conflict alone.
	r = run(t, f, reviewcmd.Options{JSON: true}, false)
	if r.err != nil {
		t.Fatal(r.err)
	}
	var cs struct {
		Summary review.Summary `json:"summary"`
		Items   []struct {
			Path     string `json:"path"`
			Conflict bool   `json:"conflict"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.out), &cs); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.out)
	}
	if cs.Summary.Files != 1 || len(cs.Items) != 1 || cs.Items[0].Path != "c.txt" || !cs.Items[0].Conflict {
		t.Errorf("left after --yes: %+v", cs)
	}

	r = run(t, f, reviewcmd.Options{Undo: true}, false)
	if r.err != nil {
		t.Fatal(r.err)
	}
	// --undo lists what it restored (issue 12, item 6: it gave only the count), in the
	// reverse of the apply's order.
	if r.out != "Restored 2 paths from the last apply:\n  restored new.txt\n  restored a.txt\n" {
		t.Errorf("--undo stdout: %q", r.out)
	}
	hostUntouched(t, f)
}

// On a terminal the person decides; an abort applies nothing and exits 1 silently (the
// message is on stderr).
func TestReviewOnTerminal(t *testing.T) {
	f := newChanges(t)
	var asked []string
	abort := func(cs *review.Changeset) ([]review.Decision, error) {
		for _, it := range cs.Items {
			asked = append(asked, it.Path)
		}
		return nil, reviewcmd.ErrAborted
	}
	r := run(t, f, reviewcmd.Options{Decide: abort}, true)
	if exitcode.Of(r.err) != exitcode.Error || !errors.Is(r.err, exitcode.ErrSilent) {
		t.Fatalf("error %v, want a silent exit 1", r.err)
	}
	// On a terminal, stderr first shows what the review waits for (issue 12, item 7).
	progress := "Connecting to sshd-test… reading the agent's changes to " + f.Workdir + "…\n"
	if r.errOut != progress+"Aborted: nothing was applied, host and guest are untouched.\n" || r.out != "" {
		t.Errorf("stdout %q, stderr %q", r.out, r.errOut)
	}
	if strings.Join(asked, " ") != "a.txt c.txt new.txt" {
		t.Errorf("the person was asked about %q", asked)
	}
	hostUntouched(t, f)

	// Accept one file: only it is written, and (without --yes) no conflict list.
	acceptA := func(*review.Changeset) ([]review.Decision, error) {
		return []review.Decision{{Path: "a.txt", Action: review.Accept}}, nil
	}
	r = run(t, f, reviewcmd.Options{Decide: acceptA}, true)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.out != "Applied: 1 path written on the host. Undo with `limactl mcp review sshd-test --undo`.\n  wrote   a.txt\n" {
		t.Errorf("stdout: %q", r.out)
	}
	// The apply (which fetches content from the guest) shows progress too, and the automatic
	// checkpoint of the guest copy it took first.
	if want := progress + "Applying to " + f.Workdir + "…\nThe guest copy as reviewed is checkpoint 1 (`limactl mcp restore sshd-test 1`).\n"; r.errOut != want {
		t.Errorf("stderr %q, want %q", r.errOut, want)
	}
	if a, n := f.ReadHost("a.txt"), f.ReadHost("new.txt"); a != "a2\n" || n != "<missing>" {
		t.Errorf("a.txt %q, new.txt %q", a, n)
	}
}

// PATH arguments limit the review; --patch prints a diff and writes nothing.
func TestReviewPathsAndPatch(t *testing.T) {
	f := newChanges(t)
	r := run(t, f, reviewcmd.Options{Paths: []string{f.Workdir + "/new.txt"}, Patch: true}, false)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !strings.Contains(r.out, "+++ b/new.txt\n") || strings.Contains(r.out, "a.txt") {
		t.Errorf("--patch of new.txt:\n%s", r.out)
	}
	r = run(t, f, reviewcmd.Options{Paths: []string{f.Workdir + "/new.txt"}, Yes: true}, false)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if f.ReadHost("new.txt") != "new\n" || f.ReadHost("a.txt") != "a\n" {
		t.Errorf("--yes new.txt wrote more or less than new.txt:\n%s", r.out)
	}
}

func TestReviewNothingToReview(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	r := run(t, f, reviewcmd.Options{Yes: true}, false)
	if r.err != nil || r.out != "Nothing to review: the agent changed nothing and the staged copy matches the host.\n" {
		t.Errorf("error %v, stdout %q", r.err, r.out)
	}
}

// A review with no change of the agent's says no more than it knows: the host's edits since
// staging are not in the guest copy, and sync brings them in (it said the staged copy matched
// the host).
func TestReviewNothingToReviewHostEdited(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n"})
	f.WriteHost("a.txt", "host edit\n")
	r := run(t, f, reviewcmd.Options{Yes: true}, false)
	want := "Nothing to review: the agent changed nothing; 1 host edit is not in the guest copy: `limactl mcp sync " + sessiontest.Instance + "` brings it in.\n"
	if r.err != nil || r.out != want {
		t.Errorf("error %v, stdout %q, want %q", r.err, r.out, want)
	}
	f.WriteHost("new.txt", "new\n")
	r = run(t, f, reviewcmd.Options{Yes: true}, false)
	if want := "2 host edits are not in the guest copy: `limactl mcp sync " + sessiontest.Instance + "` brings them in.\n"; r.err != nil || !strings.HasSuffix(r.out, want) {
		t.Errorf("error %v, stdout %q, want the suffix %q", r.err, r.out, want)
	}
	// Limited to paths, it counts the host edits there only.
	r = run(t, f, reviewcmd.Options{Yes: true, Paths: []string{f.Workdir + "/sub"}}, false)
	if want := "Nothing to review: the agent changed nothing under the paths given, and there the staged copy matches the host.\n"; r.err != nil || r.out != want {
		t.Errorf("error %v, stdout %q, want %q", r.err, r.out, want)
	}
	if f.ReadHost("a.txt") != "host edit\n" || f.Guest("cat a.txt") != "a\n" {
		t.Error("a review with nothing to review changed a side")
	}
}
