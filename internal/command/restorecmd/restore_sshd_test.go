package restorecmd_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/restorecmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/reviewcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/statuscmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
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
