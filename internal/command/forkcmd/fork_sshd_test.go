package forkcmd_test

import (
	"context"
	"encoding/json"
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/comparecmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/discardcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/forkcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/reviewcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/statuscmd"
	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

type result struct {
	out, errOut string
	err         error
}

func fork(f *sessiontest.Fixture, from string, names ...string) result {
	ios, _, out, errOut := iostreams.Test()
	err := forkcmd.Run(context.Background(), &forkcmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, From: from, Names: names, Open: f.Opener()})
	return result{out.String(), errOut.String(), err}
}

func compare(f *sessiontest.Fixture, asJSON bool, names ...string) result {
	ios, _, out, errOut := iostreams.Test()
	err := comparecmd.Run(context.Background(), &comparecmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, Sessions: names, JSON: asJSON, Open: f.Opener()})
	return result{out.String(), errOut.String(), err}
}

// session loads a session of the fixture's working directory.
func session(t *testing.T, f *sessiontest.Fixture, name string) *staging.Session {
	t.Helper()
	target, err := f.Opener()(context.Background(), sessiontest.Instance)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(target.Close)
	s, err := target.Session(f.Workdir, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// cleanupForks removes the forks' copies and checkpoint stores from the "guest" when the test
// ends (the fixture removes its own session's).
func cleanupForks(t *testing.T, f *sessiontest.Fixture, names ...string) {
	t.Cleanup(func() {
		for _, n := range names {
			id := staging.SessionIDOf(f.Workdir, n)
			p, _ := staging.SessionGuestPath(f.Workdir, n, f.Srv.Home, id)
			f.Srv.Run(t, "rm", "-rf", p, path.Join(f.Srv.Home, ".cache", "limactl-mcp", "checkpoints", id), path.Join(f.Srv.Home, ".cache", "limactl-mcp", "sessions", id))
		}
	})
}

// Best of three on a real sshd: three forks of a checkpoint start exactly there (not at the
// origin's later edits), each "agent" changes them differently, compare says where they
// agree and differ, one is reviewed and applied, and --all-but discards the others.
func TestForkCompareApplyDiscard(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n", "b.txt": "b1\nb2\nb3\n", "c.txt": "c\n", "d/e.txt": "e\n"})
	cleanupForks(t, f, "try1", "try2", "try3")
	f.Guest("echo agent-before >> a.txt")
	origin := session(t, f, "")
	ck, err := origin.Checkpoint(context.Background(), "start", false)
	if err != nil {
		t.Fatal(err)
	}
	// After the checkpoint the origin goes on: the forks at the checkpoint do not see this.
	f.Guest("echo later > later.txt && rm c.txt")

	r := fork(f, "default@"+ck.Checkpoint.ID, "try1", "try2", "try3")
	if r.err != nil {
		t.Fatalf("fork: %v\n%s%s", r.err, r.out, r.errOut)
	}
	for _, n := range []string{"try1", "try2", "try3"} {
		if !strings.Contains(r.out, "Forked session "+n+" from default at checkpoint "+ck.Checkpoint.ID) {
			t.Errorf("fork output lacks %s:\n%s", n, r.out)
		}
	}
	if !strings.Contains(r.out, "limactl mcp compare sshd-test try1 try2 try3") {
		t.Errorf("fork output:\n%s", r.out)
	}
	paths := map[string]string{}
	for _, n := range []string{"try1", "try2", "try3"} {
		s := session(t, f, n)
		paths[n] = s.State.GuestPath
		if s.State.Fork == nil || s.State.Fork.Session != "" || s.State.Fork.Checkpoint != ck.Checkpoint.ID {
			t.Errorf("%s: fork origin %+v", n, s.State.Fork)
		}
		// Exactly the checkpoint: a.txt with the agent's line, c.txt there, no later.txt;
		// pending: the agent's edit of a.txt only.
		if got := f.GuestAt(paths[n], "cat a.txt c.txt; ls later.txt 2>&1 | grep -c 'No such'"); got != "a\nagent-before\nc\n1\n" {
			t.Errorf("%s copy: %q", n, got)
		}
		cs, err := s.GuestChanges(context.Background())
		if err != nil || len(cs.Changes) != 1 || cs.Changes[0].Path != "a.txt" {
			t.Errorf("%s pending: %+v, %v", n, cs, err)
		}
	}
	// The origin's copy is as it was.
	if got := f.Guest("cat a.txt; ls"); got != "a\nagent-before\na.txt\nb.txt\nd\nlater.txt\n" {
		t.Errorf("origin copy: %q", got)
	}

	// Three "agents": try1 and try2 make the same change to b.txt, try3 another; each adds a
	// file of its own; try1 and try3 delete d/e.txt.
	f.GuestAt(paths["try1"], "printf 'b1\\nB2\\nb3\\n' > b.txt && echo one > one.txt && rm d/e.txt")
	f.GuestAt(paths["try2"], "printf 'b1\\nB2\\nb3\\n' > b.txt && echo two > two.txt")
	f.GuestAt(paths["try3"], "printf 'b1\\nb2\\nb3\\nb4\\nb5\\n' > b.txt && echo three > three.txt && rm d/e.txt")

	r = compare(f, false, "try1", "try2", "try3")
	if r.err != nil {
		t.Fatalf("compare: %v\n%s", r.err, r.errOut)
	}
	for _, want := range []string{
		"3 sessions compared in " + f.Workdir + ": try1 (4 changes), try2 (3 changes), try3 (4 changes)",
		"agree (try1, try2, try3)",                    // a.txt: the checkpoint's edit, in all three
		"differ (2 versions; A: try1, try2; B: try3)", // b.txt
		"M +1 −1 A", "M +2 −0 B", // b.txt's line counts
		"agree (try1, try3)", // d/e.txt
		"only try2", "only try3",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("compare lacks %q:\n%s", want, r.out)
		}
	}
	r = compare(f, true, "try1", "try2", "try3")
	var cmp struct {
		Sessions []struct{ Name string }
		Files    []struct {
			Path     string
			Verdict  string
			Variants [][]string
			Changes  []struct {
				Session        string
				Kind           string
				Added, Deleted int
			}
			Unchanged []string
		}
		BaselinesDiffer []string `json:"baselines_differ"`
	}
	if err := json.Unmarshal([]byte(r.out), &cmp); err != nil || r.err != nil {
		t.Fatalf("compare --json: %v %v\n%s", err, r.err, r.out)
	}
	verdicts := map[string]string{}
	for _, fl := range cmp.Files {
		verdicts[fl.Path] = fl.Verdict
	}
	want := map[string]string{"a.txt": "agree", "b.txt": "differ", "d/e.txt": "agree", "one.txt": "only", "two.txt": "only", "three.txt": "only"}
	if len(verdicts) != len(want) || len(cmp.BaselinesDiffer) != 0 {
		t.Errorf("compare --json verdicts %v, baselines differ %v", verdicts, cmp.BaselinesDiffer)
	}
	for p, v := range want {
		if verdicts[p] != v {
			t.Errorf("compare --json: %s is %q, want %q", p, verdicts[p], v)
		}
	}

	// status groups the forks under their origin.
	ios, _, out, _ := iostreams.Test()
	if err := statuscmd.Run(context.Background(), &statuscmd.Options{IO: ios, Instance: sessiontest.Instance, Open: f.Opener()}); err != nil {
		t.Fatal(err)
	}
	st := out.String()
	iOrigin := strings.Index(st, f.Workdir+"\n")
	i1 := strings.Index(st, "[session try1, a fork of default]")
	if iOrigin < 0 || i1 < iOrigin || !strings.Contains(st, "forked from: session default at checkpoint "+ck.Checkpoint.ID) {
		t.Errorf("status:\n%s", st)
	}

	// try3 is kept: its review applies to the host.
	ios, _, out, errOut := iostreams.Test()
	if err := reviewcmd.Run(context.Background(), &reviewcmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, Session: "try3", Yes: true, Open: f.Opener()}); err != nil {
		t.Fatalf("review: %v\n%s%s", err, out, errOut)
	}
	if f.ReadHost("b.txt") != "b1\nb2\nb3\nb4\nb5\n" || f.ReadHost("three.txt") != "three\n" || f.ReadHost("d/e.txt") != "<missing>" || f.ReadHost("one.txt") != "<missing>" || f.ReadHost("c.txt") != "c\n" {
		t.Errorf("host after applying try3: b=%q three=%q e=%q", f.ReadHost("b.txt"), f.ReadHost("three.txt"), f.ReadHost("d/e.txt"))
	}
	// Now try1's b.txt is a conflict, and compare says the baselines differ.
	r = compare(f, false, "try1", "try3")
	if !strings.Contains(r.out, "the sessions' baselines differ") {
		t.Errorf("compare after an apply:\n%s", r.out)
	}

	// discard --all-but try3: try1 and try2 go; try3 and the origin stay.
	ios, _, out, errOut = iostreams.Test()
	if err := discardcmd.Run(context.Background(), &discardcmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, AllBut: "try3", Open: f.Opener()}); err == nil || !strings.Contains(err.Error(), "--all-but try3 --yes") {
		t.Errorf("discard --all-but without a terminal or --yes: %v", err)
	}
	ios, _, out, errOut = iostreams.Test()
	if err := discardcmd.Run(context.Background(), &discardcmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, AllBut: "try3", Yes: true, Open: f.Opener()}); err != nil {
		t.Fatalf("discard --all-but: %v\n%s", err, errOut)
	}
	if !strings.Contains(out.String(), "Discarded session try1, with 4 pending changes") || !strings.Contains(out.String(), "Discarded session try2") || !strings.Contains(out.String(), "Kept session try3; not discarded: default") {
		t.Errorf("discard --all-but:\n%s", out)
	}
	sts, err := f.Store.SessionsOf(f.Workdir)
	if err != nil || len(sts) != 2 || sts[0].Session != "" || sts[1].Session != "try3" {
		t.Errorf("sessions left: %d, %v", len(sts), err)
	}
	if got := f.Srv.Run(t, "bash", "-c", "ls -d "+paths["try1"]+" "+paths["try2"]+" 2>&1 | grep -c 'No such'"); got != "2\n" {
		t.Errorf("the discarded forks' copies: %q", got)
	}
}

// A fork's files are its own: an in-place write in the fork (the way `>>`, gofmt -w or an
// editor writes) changes neither the origin's copy nor the content of the origin's
// checkpoints, which the fork's store shares (hard links to the objects, stored once), and
// the origin's checkpoint still restores.
func TestForkIsACopyNotALink(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n", "big.bin": strings.Repeat("x", 1<<20)})
	cleanupForks(t, f, "b")
	origin := session(t, f, "")
	ck, err := origin.Checkpoint(context.Background(), "start", false)
	if err != nil {
		t.Fatal(err)
	}
	r := fork(f, "", "b")
	if r.err != nil {
		t.Fatalf("fork: %v\n%s", r.err, r.errOut)
	}
	if !strings.Contains(r.out, "shares 2 objects of default's checkpoint store") || !strings.Contains(r.out, "knows the content of 2 files copied unchanged") {
		t.Errorf("fork output:\n%s", r.out)
	}
	fork := session(t, f, "b")
	home := f.Srv.Home
	objects := func(id string) string {
		return f.Srv.Run(t, "bash", "-c", "cd "+home+"/.cache/limactl-mcp/checkpoints/"+id+"/objects && stat -c '%i %n' * | sort")
	}
	if o, b := objects(origin.State.ID), objects(fork.State.ID); o != b || o == "" {
		t.Errorf("the fork's store does not share the origin's objects:\n%s\n%s", o, b)
	}
	// Inodes of the copies differ from the origin's and from the store's.
	inodes := f.Srv.Run(t, "bash", "-c", "stat -c %i "+f.GuestPath+"/a.txt "+fork.State.GuestPath+"/a.txt "+home+"/.cache/limactl-mcp/checkpoints/"+origin.State.ID+"/objects/*")
	seen := map[string]bool{}
	for _, i := range strings.Fields(inodes) {
		if seen[i] {
			t.Errorf("a file is shared (inodes %s)", inodes)
		}
		seen[i] = true
	}
	// The fork's own first checkpoint stores nothing new: its content is the shared objects.
	fck, err := fork.Checkpoint(context.Background(), "mine", false)
	if err != nil {
		t.Fatal(err)
	}
	if fck.Checkpoint.Stored != 0 || fck.Checkpoint.Files != 2 {
		t.Errorf("the fork's first checkpoint stored %d bytes of %d files: the shared content was stored again", fck.Checkpoint.Stored, fck.Checkpoint.Files)
	}
	f.GuestAt(fork.State.GuestPath, "echo in-place >> a.txt && printf y | dd of=big.bin bs=1 seek=0 conv=notrunc status=none")
	if got := f.Guest("cat a.txt; head -c 3 big.bin"); got != "a\nxxx" {
		t.Errorf("the origin's copy changed with the fork's: %q", got)
	}
	f.Guest("rm a.txt big.bin")
	if _, err := origin.RestoreCheckpoint(context.Background(), ck.Checkpoint.ID, false); err != nil {
		t.Fatalf("the origin's checkpoint after the fork's writes: %v", err)
	}
	if got := f.Guest("cat a.txt; head -c 3 big.bin"); got != "a\nxxx" {
		t.Errorf("restored: %q", got)
	}
}

// Bad forks are refused with an error that says why, before anything is made.
func TestForkRefusals(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	cleanupForks(t, f, "x", "y", "z")
	for _, c := range []struct {
		from  string
		names []string
		want  string
	}{
		{"", []string{"default"}, "a fork is a named session"},
		{"", []string{"x", "x"}, `"x" is named twice`},
		{"", []string{"bad/name"}, "1 to 32 letters"},
		{"x", []string{"x"}, "is the session forked from"},
		{"default@", []string{"x"}, "checkpoint id, a number"},
		{"default@zz", []string{"x"}, "checkpoint id, a number"},
		{"default@7", []string{"x"}, `no such checkpoint "7": this session has none`},
		{"nosuch", []string{"x"}, `no staged session "nosuch"`},
	} {
		r := fork(f, c.from, c.names...)
		if r.err == nil || !strings.Contains(r.err.Error(), c.want) {
			t.Errorf("fork --session %q %v: %v, want %q", c.from, c.names, r.err, c.want)
		}
	}
	if sts, _ := f.Store.SessionsOf(f.Workdir); len(sts) != 1 {
		t.Errorf("a refused fork left %d sessions", len(sts))
	}
	if r := fork(f, "", "x"); r.err != nil {
		t.Fatal(r.err)
	}
	r := fork(f, "", "y", "x")
	if r.err == nil || !errors.Is(r.err, staging.ErrSessionExists) || !strings.Contains(r.err.Error(), "forked before it: y") {
		t.Errorf("forking onto an existing session: %v", r.err)
	}
	// A session under a network policy: a fork at a checkpoint it does not have is refused
	// as for any session, and a fork needs an agent user of its own, which this sshd's user
	// (no sudo) cannot set up; said, and nothing made either way. The VM's
	// TestForkUnderNetworkPolicy and TestForkHostileTreesUnderPolicy fork such sessions.
	st, base, err := f.Store.LoadSession(f.Workdir, "x")
	if err != nil {
		t.Fatal(err)
	}
	st.Network = "none"
	if err := f.Store.Save(st, base); err != nil {
		t.Fatal(err)
	}
	if r := fork(f, "x@1", "z"); r.err == nil || !errors.Is(r.err, staging.ErrUnknownCheckpoint) {
		t.Errorf("forking a session under a policy at a checkpoint it does not have: %v", r.err)
	}
	if r := fork(f, "x", "z"); r.err == nil || !errors.Is(r.err, guest.ErrPolicyNeedsSudo) {
		t.Errorf("forking a session under a policy without sudo: %v", r.err)
	}
	if _, _, err := f.Store.LoadSession(f.Workdir, "z"); !errors.Is(err, staging.ErrNoSession) {
		t.Errorf("a refused fork left session z: %v", err)
	}
	if r := compare(f, false, "x"); r.err == nil || !strings.Contains(r.err.Error(), "two sessions or more") {
		t.Errorf("compare of one session: %v", r.err)
	}
}
