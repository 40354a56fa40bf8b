package reviewcmd_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/reviewcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// usedSecrets writes, as the relay does, a log of uses into f's session: the Anthropic key
// three times, the OpenAI key once, and a request that carried none (not a use).
func usedSecrets(t *testing.T, f *sessiontest.Fixture) {
	t.Helper()
	dir := f.Store.SessionDir(staging.SessionID(f.Workdir))
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	log := &secrets.FileLog{Dir: dir}
	for range 3 {
		log.Record(secrets.Use{Time: time.Now(), Host: "api.anthropic.com:443", Secrets: []string{"ANTHROPIC_API_KEY"}, Method: "POST", Path: "/v1/messages", Status: 200})
	}
	log.Record(secrets.Use{Time: time.Now(), Host: "api.openai.com:443", Secrets: []string{"OPENAI_API_KEY"}, Method: "POST", Path: "/v1/responses", Status: 200})
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
