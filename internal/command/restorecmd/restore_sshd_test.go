package restorecmd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/restorecmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/reviewcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/statuscmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// The person's side of checkpoints: status lists them, review --since shows what changed since
// one, restore puts the guest copy back (checkpointing it first), and the host never changes.
func TestRestoreStatusAndReviewSince(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "d/c.txt": "c\n"})
	checkpoint(t, f, "start")
	listing := func() string {
		return f.Guest("find . -path ./.git -prune -o -printf '%p %y %m %l\\n' | sort && cat a.txt d/c.txt && (cat b.txt 2>/dev/null || echo no b.txt)")
	}
	before := listing()
	f.Guest("echo broken > a.txt && rm b.txt && chmod 700 d && ln -s /etc d/link && mkdir -p n/m && touch n/m/x")

	// status lists the checkpoint.
	ios, _, out, _ := iostreams.Test()
	if err := statuscmd.Run(context.Background(), &statuscmd.Options{IO: ios, Instance: sessiontest.Instance, Open: f.Opener()}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "checkpoints: 1 checkpoint") || !strings.Contains(out.String(), "start") {
		t.Errorf("status:\n%s", out)
	}
	ios, _, out, _ = iostreams.Test()
	if err := statuscmd.Run(context.Background(), &statuscmd.Options{IO: ios, Instance: sessiontest.Instance, Open: f.Opener(), JSON: true}); err != nil {
		t.Fatal(err)
	}
	var st struct {
		Sessions []struct {
			Checkpoints []struct {
				ID    int
				Label string
				Files int
			}
		}
	}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil || len(st.Sessions) != 1 || len(st.Sessions[0].Checkpoints) != 1 || st.Sessions[0].Checkpoints[0].Label != "start" || st.Sessions[0].Checkpoints[0].Files != 3 {
		t.Errorf("status --json: %v\n%s", err, out)
	}

	// review --since: what changed since, read-only.
	review := func(opts reviewcmd.Options) string {
		t.Helper()
		ios, _, out, _ := iostreams.Test()
		opts.IO, opts.Instance, opts.Workdir, opts.Open, opts.Since = ios, sessiontest.Instance, f.Workdir, f.Opener(), "1"
		if err := reviewcmd.Run(context.Background(), &opts); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if got := review(reviewcmd.Options{}); !strings.Contains(got, "5 changes in the guest copy since checkpoint 1 (start)") ||
		!strings.Contains(got, "modified        a.txt") || !strings.Contains(got, "deleted         b.txt") || !strings.Contains(got, "mode-changed    d\n") || !strings.Contains(got, "added           n/m/x") {
		t.Errorf("review --since:\n%s", got)
	}
	if got := review(reviewcmd.Options{Patch: true}); !strings.Contains(got, "-a\n+broken\n") || !strings.Contains(got, "deleted file mode 100644") {
		t.Errorf("review --since --patch:\n%s", got)
	}
	if got := review(reviewcmd.Options{JSON: true}); !strings.Contains(got, `"kind": "deleted"`) || !strings.Contains(got, `"label": "start"`) {
		t.Errorf("review --since --json:\n%s", got)
	}

	// restore --dry-run changes nothing; restore puts the exact tree back.
	broken := listing()
	ios, _, out, _ = iostreams.Test()
	if err := restorecmd.Run(context.Background(), &restorecmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, Open: f.Opener(), Checkpoint: "1", DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if listing() != broken || !strings.Contains(out.String(), "would change 7 paths") {
		t.Errorf("dry run: %s", out)
	}
	ios, _, out, _ = iostreams.Test()
	if err := restorecmd.Run(context.Background(), &restorecmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, Open: f.Opener(), Checkpoint: "1"}); err != nil {
		t.Fatal(err)
	}
	if got := listing(); got != before {
		t.Errorf("after restore:\n%s\nwant:\n%s", got, before)
	}
	if !strings.Contains(out.String(), "changed back. The host was not changed.") || !strings.Contains(out.String(), "restore sshd-test 2` goes back to it") {
		t.Errorf("restore said:\n%s", out)
	}
	if f.ReadHost("a.txt") != "a\n" || f.ReadHost("b.txt") != "b\n" {
		t.Error("the host changed")
	}
	// And back to the broken state: the restore checkpointed it first.
	ios, _, _, _ = iostreams.Test()
	if err := restorecmd.Run(context.Background(), &restorecmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, Open: f.Opener(), Checkpoint: "2"}); err != nil {
		t.Fatal(err)
	}
	if got := listing(); got != broken {
		t.Errorf("after restoring the automatic checkpoint:\n%s\nwant:\n%s", got, broken)
	}
	// An unknown checkpoint names the ones there are.
	ios, _, _, _ = iostreams.Test()
	err := restorecmd.Run(context.Background(), &restorecmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, Open: f.Opener(), Checkpoint: "9"})
	if err == nil || !strings.Contains(err.Error(), `no such checkpoint "9": this session has 1, 2, 3`) {
		t.Errorf("unknown checkpoint: %v", err)
	}
}

// A review apply checkpoints the guest copy first.
func TestReviewApplyCheckpointsFirst(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	f.Guest("echo agent > a.txt")
	ios, _, _, errOut := iostreams.Test()
	if err := reviewcmd.Run(context.Background(), &reviewcmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, Open: f.Opener(), Yes: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "The guest copy as reviewed is checkpoint 1") {
		t.Errorf("review stderr: %q", errOut)
	}
	ios, _, out, _ := iostreams.Test()
	if err := statuscmd.Run(context.Background(), &statuscmd.Options{IO: ios, Instance: sessiontest.Instance, Open: f.Opener()}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "before review apply (automatic)") {
		t.Errorf("status:\n%s", out)
	}
}

func checkpoint(t *testing.T, f *sessiontest.Fixture, label string) {
	t.Helper()
	target, err := f.Opener()(context.Background(), sessiontest.Instance)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	s, err := target.Session(f.Workdir, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Checkpoint(context.Background(), label, false); err != nil {
		t.Fatal(err)
	}
}

// A checkpoint whose stored content was damaged (a guest crash, the agent's edit: missing,
// short, other bytes, a symlink or a directory in its place) cannot be restored, and the
// restore changes nothing: the guest copy is the same, entry for entry and byte for byte; the
// error says so, names the automatic checkpoint just taken (the copy as it was) and never
// advises removing anything.
func TestRestoreOfADamagedCheckpointChangesNothing(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "d/c.txt": "the content of c\n"})
	checkpoint(t, f, "start")
	f.Guest("echo agent > a.txt && rm b.txt && echo agent > d/c.txt && mkdir -p n/m && echo new > n/m/x && chmod 700 d")
	snapshot := func() string {
		return f.Guest("find . -path ./.git -prune -o -printf '%p %y %m %l\\n' | sort && find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 sha256sum")
	}
	want := snapshot()
	store := ".cache/limactl-mcp/checkpoints/" + staging.SessionID(f.Workdir) + "/objects"
	obj := f.Srv.Home + "/" + store + "/$(printf 'the content of c\\n' | sha256sum | cut -d' ' -f1)"
	damages := map[string]string{
		"missing":   "rm -f " + obj,
		"short":     "truncate -s 5 " + obj,
		"corrupted": "printf 'THE content of c\\n' > " + obj,
		"symlink":   "printf 'the content of c\\n' > /tmp/right-content-$$ && rm -f " + obj + " && ln -s /tmp/right-content-$$ " + obj,
		"directory": "rm -f " + obj + " && mkdir " + obj,
	}
	save := f.Guest("base64 -w0 < " + obj)
	beforeID := 1
	for _, kind := range []string{"missing", "short", "corrupted", "symlink", "directory"} {
		f.Guest("o=" + obj + "; rm -rf \"$o\"; echo " + save + " | base64 -d > \"$o\" && " + damages[kind])
		ios, _, out, _ := iostreams.Test()
		err := restorecmd.Run(context.Background(), &restorecmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, Open: f.Opener(), Checkpoint: "1"})
		beforeID++
		if err == nil {
			t.Fatalf("%s object: the restore succeeded:\n%s", kind, out)
		}
		if got := snapshot(); got != want {
			t.Fatalf("%s object: the failed restore changed the guest copy:\n%s\nwant:\n%s", kind, got, want)
		}
		msg := err.Error()
		back := fmt.Sprintf("checkpoint %d: `limactl mcp restore sshd-test %d` goes back to it", beforeID, beforeID)
		if !strings.Contains(msg, "damaged") || !strings.Contains(msg, "d/c.txt") || !strings.Contains(msg, "was not changed") || !strings.Contains(msg, back) {
			t.Errorf("%s object: the error does not say what is damaged, that nothing changed and where to go back:\n%s", kind, msg)
		}
		if strings.Contains(strings.ToLower(msg), "remove") || strings.Contains(msg, "delete") {
			t.Errorf("%s object: the error advises removing something:\n%s", kind, msg)
		}
	}
	// The automatic checkpoint named is the copy as it was.
	f.Guest("echo later > a.txt")
	ios, _, _, _ := iostreams.Test()
	if err := restorecmd.Run(context.Background(), &restorecmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, Open: f.Opener(), Checkpoint: fmt.Sprint(beforeID)}); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(); got != want {
		t.Fatalf("after restoring checkpoint %d:\n%s\nwant:\n%s", beforeID, got, want)
	}
}
