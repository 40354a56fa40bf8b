package reviewcmd_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/exitcode"
	"github.com/limactl-mcp/limactl-mcp/internal/command/reviewcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// usedSecrets writes, as the relay does, a log of uses into f's session: the Anthropic key
// three times, the OpenAI key once, and a request that carried none (not a use).
func usedSecrets(t *testing.T, f *sessiontest.Fixture) {
	t.Helper()
	usedSecretsIn(t, f, "", 3, 1)
}

// usedSecretsIn writes into the log of uses of f's session named session (as the relay does)
// anthropic uses of the Anthropic key, openai of the OpenAI key, and a request that carried
// none (not a use).
func usedSecretsIn(t *testing.T, f *sessiontest.Fixture, session string, anthropic, openai int) {
	t.Helper()
	dir := f.Store.SessionDir(staging.SessionIDOf(f.Workdir, session))
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	log := &secrets.FileLog{Dir: dir}
	for range anthropic {
		log.Record(secrets.Use{Time: time.Now(), Host: "api.anthropic.com:443", Secrets: []string{"ANTHROPIC_API_KEY"}, Method: "POST", Path: "/v1/messages", Status: 200})
	}
	for range openai {
		log.Record(secrets.Use{Time: time.Now(), Host: "api.openai.com:443", Secrets: []string{"OPENAI_API_KEY"}, Method: "POST", Path: "/v1/responses", Status: 200})
	}
	log.Record(secrets.Use{Time: time.Now(), Host: "api.anthropic.com:443", Method: "GET", Path: "/", Status: 404})
	if _, err := os.Stat(filepath.Join(dir, secrets.UsesFile)); err != nil {
		t.Fatal(err)
	}
}

const (
	anthropicUses = "Secrets: ANTHROPIC_API_KEY used 3 times, only with api.anthropic.com.\n"
	openaiUses    = "Secrets: OPENAI_API_KEY used 1 time, only with api.openai.com.\n"
)

// The person reads how the session used its secrets with what it changed: in the summary
// without a terminal, of --dry-run and of --yes, before the changes, and in --json.
func TestReviewShowsSecretsUses(t *testing.T) {
	f := newChanges(t)
	usedSecrets(t, f)
	for _, c := range []struct {
		what string
		opts reviewcmd.Options
	}{{"no terminal", reviewcmd.Options{}}, {"--dry-run", reviewcmd.Options{DryRun: true}}} {
		r := run(t, f, c.opts, false)
		wantLines(t, c.what, r.out, anthropicUses+openaiUses+"3 files changed by the agent")
	}
	r := run(t, f, reviewcmd.Options{JSON: true}, false)
	if r.err != nil {
		t.Fatal(r.err)
	}
	var doc struct{ Secrets []string }
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil {
		t.Fatal(err)
	}
	want := []string{"ANTHROPIC_API_KEY used 3 times, only with api.anthropic.com", "OPENAI_API_KEY used 1 time, only with api.openai.com"}
	if strings.Join(doc.Secrets, "\n") != strings.Join(want, "\n") {
		t.Errorf("--json secrets %q, want %q", doc.Secrets, want)
	}
	hostUntouched(t, f)
	r = run(t, f, reviewcmd.Options{Yes: true}, false)
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.errOut)
	}
	wantLines(t, "--yes", r.out, anthropicUses+openaiUses+"Applied:")
}

// A session that used no secret shows no such line, and --json has no "secrets".
func TestReviewWithoutSecretsShowsNone(t *testing.T) {
	f := newChanges(t)
	r := run(t, f, reviewcmd.Options{DryRun: true}, false)
	if r.err != nil || strings.Contains(r.out, "Secrets") || !strings.HasPrefix(r.out, "3 files changed by the agent") {
		t.Errorf("err %v, out:\n%s", r.err, r.out)
	}
	r = run(t, f, reviewcmd.Options{JSON: true}, false)
	if r.err != nil || strings.Contains(r.out, `"secrets"`) {
		t.Errorf("err %v, --json:\n%s", r.err, r.out)
	}
}

// A damaged log of uses (here a link where the log is, which is not followed) is said as
// unknown, with the reason; the review goes on.
func TestReviewDamagedSecretsLog(t *testing.T) {
	f := newChanges(t)
	dir := f.Store.SessionDir(staging.SessionID(f.Workdir))
	outside := filepath.Join(t.TempDir(), "uses.jsonl")
	if err := os.WriteFile(outside, []byte(`{"Host":"api.anthropic.com:443","Secrets":["ANTHROPIC_API_KEY"]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, secrets.UsesFile)); err != nil {
		t.Fatal(err)
	}
	r := run(t, f, reviewcmd.Options{DryRun: true}, false)
	if r.err != nil {
		t.Fatalf("the review failed for a damaged log: %v", r.err)
	}
	wantLines(t, "--dry-run", r.out, "Secrets: unknown (", secrets.UsesFile, "3 files changed by the agent", "With --yes, this would:")
	if strings.Contains(r.out, "used 1 time") {
		t.Errorf("the log outside the session's directory was read:\n%s", r.out)
	}
	r = run(t, f, reviewcmd.Options{JSON: true}, false)
	var doc struct{ Secrets []string }
	if err := json.Unmarshal([]byte(r.out), &doc); r.err != nil || err != nil || len(doc.Secrets) != 1 || !strings.HasPrefix(doc.Secrets[0], "unknown (") {
		t.Errorf("--json: err %v %v, secrets %q", r.err, err, doc.Secrets)
	}
}

// In the review's TUI, on a real terminal, the secrets' uses are over the list of files.
func TestReviewTUIShowsSecretsUses(t *testing.T) {
	f := newChanges(t)
	usedSecrets(t, f)
	s := startCompare(t, f, 120, 40, "")
	scr := s.WaitFor(time.Minute, strings.TrimSuffix(anthropicUses, "\n"), strings.TrimSuffix(openaiUses, "\n"), "M a.txt")
	if strings.Index(scr, "Secrets: ANTHROPIC") > strings.Index(scr, "M a.txt") {
		t.Errorf("the uses are not over the list of files:\n%s", scr)
	}
	s.Keys("Escape")
	s.WaitFor(time.Minute, "Aborted: nothing was applied", "review failed")
	hostUntouched(t, f)
}

// review --since shows the session's uses of its secrets, as a plain review does: before the
// changes since the checkpoint, and in --json; none when the session used no secret.
func TestReviewSinceShowsSecretsUses(t *testing.T) {
	f := newChanges(t)
	target, err := f.Opener()(context.Background(), sessiontest.Instance)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	sess, err := target.Session(f.Workdir, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Checkpoint(context.Background(), "start", false); err != nil {
		t.Fatal(err)
	}
	f.Guest("echo later > later.txt")
	since := func(json bool) string {
		t.Helper()
		r := run(t, f, reviewcmd.Options{Since: "1", JSON: json}, false)
		if r.err != nil {
			t.Fatalf("review --since 1: %v\n%s", r.err, r.errOut)
		}
		return r.out
	}
	if out := since(false); strings.Contains(out, "Secrets") || !strings.HasPrefix(out, "1 change in the guest copy since checkpoint 1 (start)") {
		t.Errorf("no secret used, --since:\n%s", out)
	}
	if out := since(true); strings.Contains(out, `"secrets"`) {
		t.Errorf("no secret used, --since --json:\n%s", out)
	}
	usedSecrets(t, f)
	if out := since(false); !strings.HasPrefix(out, anthropicUses+openaiUses+"1 change in the guest copy since checkpoint 1 (start)") {
		t.Errorf("--since:\n%s", out)
	}
	var doc struct {
		Secrets []string
		Changes []struct{ Path string }
	}
	if err := json.Unmarshal([]byte(since(true)), &doc); err != nil {
		t.Fatal(err)
	}
	want := []string{"ANTHROPIC_API_KEY used 3 times, only with api.anthropic.com", "OPENAI_API_KEY used 1 time, only with api.openai.com"}
	if strings.Join(doc.Secrets, "\n") != strings.Join(want, "\n") || len(doc.Changes) != 1 {
		t.Errorf("--since --json: secrets %q, want %q; changes %v", doc.Secrets, want, doc.Changes)
	}
	hostUntouched(t, f)
}

// review --compare shows each session's uses of its secrets, a block per session, named:
// printed before the choice, and given to the TUI's confirmation.
func TestCompareShowsSecretsUses(t *testing.T) {
	f, _ := forkFixture(t, map[string]string{"a.txt": "a\n"}, "echo one > one.txt", "echo two > two.txt", "echo three > three.txt")
	usedSecretsIn(t, f, "try1", 3, 0)
	usedSecretsIn(t, f, "try2", 0, 1)
	r := run(t, f, reviewcmd.Options{Compare: []string{"try1", "try2", "try3"}, DecideCompare: func(*review.Compared) ([]review.Pick, error) { return nil, reviewcmd.ErrAborted }}, false)
	if !errors.Is(r.err, exitcode.ErrSilent) {
		t.Fatalf("aborted compare: %v", r.err)
	}
	if want := "Session try1: " + anthropicUses + "Session try2: " + openaiUses; !strings.HasPrefix(r.out, want) || strings.Contains(r.out, "Session try3") {
		t.Errorf("review --compare printed:\n%s\nwant first:\n%s", r.out, want)
	}
}

// In the compare TUI, on a real terminal, the confirmation shows each session's uses.
func TestCompareTUIShowsSecretsUses(t *testing.T) {
	f, _ := forkFixture(t, map[string]string{"a.txt": "a\n"}, "echo one > one.txt", "echo two > two.txt")
	usedSecretsIn(t, f, "try1", 3, 0)
	usedSecretsIn(t, f, "try2", 0, 1)
	s := startCompare(t, f, 120, 40, "try1,try2")
	const wait = time.Minute
	s.WaitFor(wait, "[1/2] one.txt · compare", "What should the host get?")
	s.Keys("Enter")
	s.WaitFor(wait, "[2/2] two.txt · compare", "What should the host get?")
	s.Keys("Enter")
	scr := s.WaitFor(wait, "Apply these changes?", "Session try1: "+strings.TrimSuffix(anthropicUses, "\n"), "Session try2: "+strings.TrimSuffix(openaiUses, "\n"), "create two.txt (from try2)")
	if strings.Index(scr, "Session try1: Secrets") > strings.Index(scr, "create one.txt") {
		t.Errorf("the uses are not above what will be done:\n%s", scr)
	}
	s.Keys("Escape")
	s.WaitFor(wait, "Aborted: nothing was applied", "review failed")
	if f.ReadHost("one.txt") != "<missing>" || f.ReadHost("two.txt") != "<missing>" {
		t.Error("the host changed")
	}
}

// In the compare TUI's accessible mode, the confirmation, read as text, has each session's uses.
func TestCompareTUIAccessibleShowsSecretsUses(t *testing.T) {
	f, _ := forkFixture(t, map[string]string{"a.txt": "a\n"}, "echo one > one.txt", "echo two > two.txt")
	usedSecretsIn(t, f, "try1", 3, 0)
	usedSecretsIn(t, f, "try2", 0, 1)
	s := startCompare(t, f, 100, 40, "try1,try2", "LMCP_H_ACCESSIBLE=1")
	const wait = time.Minute
	s.WaitFor(wait, "[1/2] one.txt · compare", "1. take A: try1")
	s.TypeLine("1")
	s.WaitFor(wait, "[2/2] two.txt · compare", "1. take A: try2")
	s.TypeLine("1")
	s.WaitFor(wait, "Session try1: "+strings.TrimSuffix(anthropicUses, "\n"), "Session try2: "+strings.TrimSuffix(openaiUses, "\n"), "create two.txt (from try2)", "Apply these changes? [y/N]")
	s.TypeLine("n")
	s.WaitFor(wait, "Aborted: nothing was applied", "review failed")
	if f.ReadHost("one.txt") != "<missing>" || f.ReadHost("two.txt") != "<missing>" {
		t.Error("the host changed")
	}
}
