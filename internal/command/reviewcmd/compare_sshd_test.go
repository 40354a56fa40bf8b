package reviewcmd_test

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/reviewcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
	"github.com/limactl-mcp/limactl-mcp/internal/udiff"
)

// compareFixture is a working directory on a real sshd with three forks of its session, each
// changed by a scripted "agent": try1 and try3 edit the same line of b.txt differently, try2
// another line of it; try1 and try2 edit c.txt differently and add different binary files
// bin.dat; try2 deletes d.txt; try1 adds one.txt.
func compareFixture(t *testing.T) (*sessiontest.Fixture, map[string]string) {
	t.Helper()
	b := ""
	for i := 1; i <= 14; i++ {
		b += "b" + string(rune('a'+i-1)) + "\n"
	}
	return forkFixture(t, map[string]string{"b.txt": b, "c.txt": "c\n", "d.txt": "d\n"},
		"sed -i 's/^bb$/ONE/' b.txt && echo c1 > c.txt && echo one > one.txt && printf 'one\\0' > bin.dat",
		"sed -i 's/^bm$/TWO/' b.txt && echo c2 > c.txt && rm d.txt && printf 'two\\0' > bin.dat",
		"sed -i 's/^bb$/THREE/' b.txt")
}

// forkFixture is a working directory of files on a real sshd with a fork of its session per
// script, try1, try2, …, each changed by its script (a scripted "agent", run in the fork's
// guest copy); it returns the forks' guest paths by name.
func forkFixture(t *testing.T, files map[string]string, scripts ...string) (*sessiontest.Fixture, map[string]string) {
	t.Helper()
	f := sessiontest.New(t, files)
	target, err := f.Opener()(context.Background(), sessiontest.Instance)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	origin, err := target.Session(f.Workdir, "")
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{}
	for k := range scripts {
		n := fmt.Sprintf("try%d", k+1)
		id := staging.SessionIDOf(f.Workdir, n)
		t.Cleanup(func() {
			p, _ := staging.SessionGuestPath(f.Workdir, n, f.Srv.Home, id)
			f.Srv.Run(t, "rm", "-rf", p, path.Join(f.Srv.Home, ".cache", "limactl-mcp", "checkpoints", id), path.Join(f.Srv.Home, ".cache", "limactl-mcp", "sessions", id))
		})
		if _, err := origin.Fork(context.Background(), n, "", staging.ForkConns{}); err != nil {
			t.Fatalf("fork %s: %v", n, err)
		}
		s, err := target.Session(f.Workdir, n)
		if err != nil {
			t.Fatal(err)
		}
		paths[n] = s.State.GuestPath
	}
	for k, script := range scripts {
		f.GuestAt(paths[fmt.Sprintf("try%d", k+1)], script)
	}
	return f, paths
}

// bWith is b.txt with lines replaced (1-based line → text).
func bWith(edit map[int]string) string {
	s := ""
	for i := 1; i <= 14; i++ {
		if e, ok := edit[i]; ok {
			s += e + "\n"
			continue
		}
		s += "b" + string(rune('a'+i-1)) + "\n"
	}
	return s
}

// The compare's core through the command, on forks on a real sshd: hunks of two sessions
// merge into one file, a whole file comes from another session, a path left stays; hunks
// that change the same lines are refused; the host ends exactly as picked; the sessions'
// copies are untouched; the first session's undo restores the host; a host edit made while
// the person chooses is not overwritten.
func TestCompareApply(t *testing.T) {
	f, paths := compareFixture(t)
	orig := bWith(nil)
	var seen *review.Compared
	picks := func(c *review.Compared) ([]review.Pick, error) {
		seen = c
		b := find(t, c, "b.txt")
		if !b.Mergeable() || len(b.Variants) != 3 {
			t.Errorf("b.txt: mergeable %v, %d variants", b.Mergeable(), len(b.Variants))
		}
		// try1's and try3's hunks change the same line: refused.
		if _, _, err := c.Merge([]review.Pick{{Path: "b.txt", Hunks: [][]bool{{true}, nil, {true}}}}); err == nil || !strings.Contains(err.Error(), "hunk 1 of try1 and hunk 1 of try3 change the same lines") {
			t.Errorf("overlapping hunks: %v", err)
		}
		if _, _, err := c.Merge([]review.Pick{{Path: "nope.txt", Session: 0}}); err == nil {
			t.Error("a pick of a path no session changed was taken")
		}
		return []review.Pick{
			{Path: "b.txt", Hunks: [][]bool{{true}, {true}, {false}}},
			{Path: "bin.dat", Session: 1},
			{Path: "c.txt", Session: 1},
			{Path: "d.txt", Session: -1},
			{Path: "one.txt", Session: 0},
		}, nil
	}
	r := run(t, f, reviewcmd.Options{Compare: []string{"try1", "try2", "try3"}, DecideCompare: picks}, false)
	if r.err != nil {
		t.Fatalf("review --compare: %v\n%s%s", r.err, r.out, r.errOut)
	}
	if seen == nil || len(seen.Paths) != 5 {
		t.Fatalf("compared paths: %+v", seen)
	}
	wantLines(t, "review --compare", r.out, "Applied: 4 paths written on the host, through session try1. Undo with `limactl mcp review sshd-test --session try1 --undo`.",
		"wrote   b.txt", "wrote   bin.dat", "wrote   c.txt", "wrote   one.txt", "discard sshd-test --all-but NAME")
	if got, want := f.ReadHost("b.txt"), bWith(map[int]string{2: "ONE", 13: "TWO"}); got != want {
		t.Errorf("b.txt on the host:\n%s\nwant\n%s", got, want)
	}
	// bin.dat is read from try2's copy (a binary file is not held in memory).
	if f.ReadHost("bin.dat") != "two\x00" {
		t.Errorf("bin.dat on the host: %q", f.ReadHost("bin.dat"))
	}
	if f.ReadHost("c.txt") != "c2\n" || f.ReadHost("one.txt") != "one\n" || f.ReadHost("d.txt") != "d\n" {
		t.Errorf("host: c.txt %q, one.txt %q, d.txt %q", f.ReadHost("c.txt"), f.ReadHost("one.txt"), f.ReadHost("d.txt"))
	}
	// The sessions' copies are as the agents left them.
	if got := f.GuestAt(paths["try1"], "sed -n 2p b.txt; cat c.txt"); got != "ONE\nc1\n" {
		t.Errorf("try1's copy: %q", got)
	}
	if got := f.GuestAt(paths["try2"], "cat c.txt; ls d.txt 2>&1 | grep -c 'No such'"); got != "c2\n1\n" {
		t.Errorf("try2's copy: %q", got)
	}

	// try1's baseline moved only where its own version was taken (one.txt): its own c.txt,
	// which the host now has in try2's version, is a conflict, and one.txt is no longer pending.
	r = run(t, f, reviewcmd.Options{Session: "try1", DryRun: true}, false)
	if !strings.Contains(r.out, "conflict (not applied): c.txt") || !strings.Contains(r.out, "conflict (not applied): b.txt") || strings.Contains(r.out, "one.txt") {
		t.Errorf("try1 after the compare:\n%s", r.out)
	}

	// Undo through the first session restores every path of the one apply.
	r = run(t, f, reviewcmd.Options{Session: "try1", Undo: true}, false)
	if r.err != nil {
		t.Fatalf("undo: %v\n%s", r.err, r.errOut)
	}
	if f.ReadHost("b.txt") != orig || f.ReadHost("c.txt") != "c\n" || f.ReadHost("one.txt") != "<missing>" || f.ReadHost("d.txt") != "d\n" || f.ReadHost("bin.dat") != "<missing>" {
		t.Errorf("after undo: b.txt %q, c.txt %q, one.txt %q", f.ReadHost("b.txt"), f.ReadHost("c.txt"), f.ReadHost("one.txt"))
	}

	// A host edit while the person chooses: that path is refused and keeps the host's edit;
	// the rest is applied.
	picks = func(c *review.Compared) ([]review.Pick, error) {
		f.WriteHost("c.txt", "host edit\n")
		return []review.Pick{{Path: "c.txt", Session: 1}, {Path: "d.txt", Session: 1}}, nil
	}
	r = run(t, f, reviewcmd.Options{Compare: []string{"try1", "try2"}, DecideCompare: picks}, false)
	if r.err == nil || !strings.Contains(r.out, "refused c.txt") || !strings.Contains(r.out, "wrote   d.txt") {
		t.Errorf("a host edit during the compare: %v\n%s%s", r.err, r.out, r.errOut)
	}
	if f.ReadHost("c.txt") != "host edit\n" || f.ReadHost("d.txt") != "<missing>" {
		t.Errorf("host: c.txt %q, d.txt %q", f.ReadHost("c.txt"), f.ReadHost("d.txt"))
	}

	// Now c.txt is a conflict in both sessions: not merged hunk by hunk; taking a version
	// overwrites the host's edit only because the person picked it.
	picks = func(c *review.Compared) ([]review.Pick, error) {
		cp := find(t, c, "c.txt")
		if !cp.Items[0].Conflict || !cp.Items[1].Conflict || cp.Mergeable() {
			t.Errorf("c.txt after a host edit: conflict %v %v, mergeable %v", cp.Items[0].Conflict, cp.Items[1].Conflict, cp.Mergeable())
		}
		if _, _, err := c.Merge([]review.Pick{{Path: "c.txt", Hunks: [][]bool{{true}, {true}}}}); err == nil {
			t.Error("hunks of a conflict were merged")
		}
		return []review.Pick{{Path: "c.txt", Session: 0}}, nil
	}
	r = run(t, f, reviewcmd.Options{Compare: []string{"try1", "try2"}, DecideCompare: picks}, false)
	if r.err != nil || f.ReadHost("c.txt") != "c1\n" {
		t.Errorf("taking a conflict's version: %v, c.txt %q\n%s%s", r.err, f.ReadHost("c.txt"), r.out, r.errOut)
	}
}

// A compare that cannot be made says why, and writes nothing.
func TestCompareRefusals(t *testing.T) {
	f, _ := compareFixture(t)
	never := func(*review.Compared) ([]review.Pick, error) {
		t.Error("asked for picks")
		return nil, reviewcmd.ErrAborted
	}
	for _, tc := range []struct {
		opts reviewcmd.Options
		want string
	}{
		{reviewcmd.Options{Compare: []string{"try1"}}, "--compare needs two sessions or more"},
		{reviewcmd.Options{Compare: []string{"try1", "try1"}}, `session "try1" is named twice`},
		{reviewcmd.Options{Compare: []string{"try1", "no/pe"}}, `session "no/pe"`},
		{reviewcmd.Options{Compare: []string{"try1", "try2"}, Yes: true}, "--compare and --yes cannot be used together"},
		{reviewcmd.Options{Compare: []string{"try1", "nosuch"}}, "nosuch"},
	} {
		tc.opts.DecideCompare = never
		if r := run(t, f, tc.opts, false); r.err == nil || !strings.Contains(r.err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.opts.Compare, r.err, tc.want)
		}
	}
	// Without a terminal, nothing is asked nor applied.
	if r := run(t, f, reviewcmd.Options{Compare: []string{"try1", "try2"}}, false); r.err == nil || !strings.Contains(r.err.Error(), "chosen on a terminal") || !strings.Contains(r.err.Error(), "`limactl mcp compare sshd-test try1 try2` prints the comparison") {
		t.Errorf("no terminal: %v", r.err)
	}
	// Aborted: nothing written.
	r := run(t, f, reviewcmd.Options{Compare: []string{"try1", "try2"}, DecideCompare: func(*review.Compared) ([]review.Pick, error) { return nil, reviewcmd.ErrAborted }}, false)
	if r.err == nil || !strings.Contains(r.errOut, "Aborted: nothing was applied") || f.ReadHost("c.txt") != "c\n" {
		t.Errorf("abort: %v %s", r.err, r.errOut)
	}
	// Once one of them has applied, their baselines differ: refused.
	if r := run(t, f, reviewcmd.Options{Session: "try3", Yes: true}, false); r.err != nil {
		t.Fatal(r.err)
	}
	if r := run(t, f, reviewcmd.Options{Compare: []string{"try1", "try3"}, DecideCompare: never}, false); r.err == nil || !strings.Contains(r.err.Error(), "baselines differ at b.txt") {
		t.Errorf("baselines differ: %v", r.err)
	}
	if _, err := os.Stat(filepath.Join(f.Workdir, "one.txt")); err == nil {
		t.Error("one.txt was written")
	}
}

func find(t *testing.T, c *review.Compared, p string) *review.ComparedPath {
	t.Helper()
	for _, cp := range c.Paths {
		if cp.Path == p {
			return cp
		}
	}
	t.Fatalf("%s is not compared", p)
	return nil
}

// linesFixture is p.txt (16 lines, l1 … l16) forked twice: try1 changes lines 3 and 5 (one
// hunk), try2 lines 5 and 13 (two hunks).
func linesFixture(t *testing.T) *sessiontest.Fixture {
	t.Helper()
	f, _ := forkFixture(t, map[string]string{"p.txt": pWith(nil)},
		"sed -i -e 's/^l3$/X3/' -e 's/^l5$/X5/' p.txt",
		"sed -i -e 's/^l5$/Y5/' -e 's/^l13$/Y13/' p.txt")
	return f
}

// pWith is p.txt with lines replaced (1-based line → text).
func pWith(edit map[int]string) string {
	s := ""
	for i := 1; i <= 16; i++ {
		if e, ok := edit[i]; ok {
			s += e + "\n"
			continue
		}
		s += fmt.Sprintf("l%d\n", i)
	}
	return s
}

// lineMarks chooses the lines of a hunk whose sign and text are in take ("-l3", "+X3"), one
// mark per line of the hunk, as the review's line choice gives them.
func lineMarks(t *testing.T, it *review.Item, h int, take ...string) []bool {
	t.Helper()
	out := make([]bool, len(it.Hunks[h].Lines))
	n := 0
	for j, l := range it.Hunks[h].Lines {
		sign := map[udiff.Op]string{udiff.Insert: "+", udiff.Delete: "-"}[l.Op]
		for _, s := range take {
			if sign != "" && s == sign+strings.TrimSuffix(l.Text, "\n") {
				out[j], n = true, n+1
			}
		}
	}
	if n != len(take) {
		t.Fatalf("hunk %d of %s: %d of %q found", h+1, it.Display, n, take)
	}
	return out
}

// Lines within a session's hunk, taken with another session's hunks, through the command on
// forks on a real sshd: the host file gets exactly the chosen lines against the baseline;
// chosen lines that change a line another session's hunk changes are refused; undo restores.
func TestCompareApplyLines(t *testing.T) {
	f := linesFixture(t)
	picks := func(c *review.Compared) ([]review.Pick, error) {
		p := find(t, c, "p.txt")
		if len(p.Items[0].Hunks) != 1 || len(p.Items[1].Hunks) != 2 {
			t.Fatalf("hunks: try1 %d, try2 %d", len(p.Items[0].Hunks), len(p.Items[1].Hunks))
		}
		x5 := review.Pick{Path: "p.txt", Hunks: [][]bool{{true}, {true, true}}, Lines: [][][]bool{{lineMarks(t, p.Items[0], 0, "-l5", "+X5")}, nil}}
		if _, _, err := c.Merge([]review.Pick{x5}); err == nil || !strings.Contains(err.Error(), "p.txt: the lines chosen of hunk 1 of try1 and hunk 1 of try2 change the same lines (at line 5 of the baseline)") {
			t.Errorf("overlapping lines: %v", err)
		}
		return []review.Pick{{Path: "p.txt", Hunks: [][]bool{{true}, {true, true}}, Lines: [][][]bool{{lineMarks(t, p.Items[0], 0, "-l3", "+X3")}, nil}}}, nil
	}
	r := run(t, f, reviewcmd.Options{Compare: []string{"try1", "try2"}, DecideCompare: picks}, false)
	if r.err != nil {
		t.Fatalf("review --compare: %v\n%s%s", r.err, r.out, r.errOut)
	}
	wantLines(t, "review --compare", r.out, "Applied: 1 path written on the host, through session try1.", "wrote   p.txt")
	if got, want := f.ReadHost("p.txt"), pWith(map[int]string{3: "X3", 5: "Y5", 13: "Y13"}); got != want {
		t.Errorf("p.txt on the host:\n%s\nwant\n%s", got, want)
	}
	if r := run(t, f, reviewcmd.Options{Session: "try1", Undo: true}, false); r.err != nil || f.ReadHost("p.txt") != pWith(nil) {
		t.Errorf("undo: %v, p.txt %q", r.err, f.ReadHost("p.txt"))
	}
	// try1's lines alone: its own partial accept (X5 stays pending in try1).
	picks = func(c *review.Compared) ([]review.Pick, error) {
		p := find(t, c, "p.txt")
		return []review.Pick{{Path: "p.txt", Hunks: [][]bool{{true}, {false, false}}, Lines: [][][]bool{{lineMarks(t, p.Items[0], 0, "-l3", "+X3")}, nil}}}, nil
	}
	if r := run(t, f, reviewcmd.Options{Compare: []string{"try1", "try2"}, DecideCompare: picks}, false); r.err != nil {
		t.Fatalf("review --compare: %v\n%s%s", r.err, r.out, r.errOut)
	}
	if got, want := f.ReadHost("p.txt"), pWith(map[int]string{3: "X3"}); got != want {
		t.Errorf("p.txt on the host:\n%s\nwant\n%s", got, want)
	}
}
