package statuscmd_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// status shows how a session used its secrets, readable and as --json "secrets"; a session
// that used none shows no line and no key.
func TestStatusShowsSecretsUses(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	type doc struct {
		Sessions []map[string]json.RawMessage `json:"sessions"`
	}
	decode := func() doc {
		t.Helper()
		var d doc
		if err := json.Unmarshal([]byte(run(t, f.Opener(), true)), &d); err != nil {
			t.Fatal(err)
		}
		if len(d.Sessions) != 1 {
			t.Fatalf("%d sessions", len(d.Sessions))
		}
		return d
	}
	if _, ok := decode().Sessions[0]["secrets"]; ok {
		t.Errorf("a session that used no secret has a \"secrets\" key")
	}
	if out := run(t, f.Opener(), false); strings.Contains(out, " used ") {
		t.Errorf("a session that used no secret shows a use:\n%s", out)
	}
	log := &secrets.FileLog{Dir: f.Store.SessionDir(staging.SessionID(f.Workdir))}
	for range 2 {
		log.Record(secrets.Use{Time: time.Now(), Host: "api.anthropic.com:443", Secrets: []string{"ANTHROPIC_API_KEY"}})
	}
	want := "ANTHROPIC_API_KEY used 2 times, only with api.anthropic.com"
	if out := run(t, f.Opener(), false); !strings.Contains(out, want) {
		t.Errorf("status lacks %q:\n%s", want, out)
	}
	var lines []string
	if err := json.Unmarshal(decode().Sessions[0]["secrets"], &lines); err != nil || len(lines) != 1 || lines[0] != want {
		t.Errorf("status --json secrets: %q (%v), want [%q]", lines, err, want)
	}
}

// The HTTPS requests the network rules ruled on are shown as requests, not as secrets' uses:
// their own line in status, their own "requests" key in --json.
func TestStatusShowsRuledRequestsApart(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	log := &secrets.FileLog{Dir: f.Store.SessionDir(staging.SessionID(f.Workdir))}
	log.Record(secrets.Use{Time: time.Now(), Host: "api.anthropic.com:443", Secrets: []string{"ANTHROPIC_API_KEY"}})
	log.Record(secrets.Use{Time: time.Now(), Host: "github.com:443", Rules: true, Method: "GET", Path: "/o/r.git/info/refs"})
	log.Record(secrets.Use{Time: time.Now(), Host: "github.com:443", Rules: true, Refused: true, Method: "POST", Path: "/o/r.git/git-receive-pack"})
	ruled := "github.com: 1 HTTPS requests allowed by the network rules, 1 refused (the last: POST /o/r.git/git-receive-pack)"
	out := run(t, f.Opener(), false)
	if !strings.Contains(out, "  secrets:    ANTHROPIC_API_KEY used 1 time, only with api.anthropic.com\n") || !strings.Contains(out, "  requests:   "+ruled+"\n") {
		t.Errorf("status:\n%s", out)
	}
	var d struct {
		Sessions []struct {
			Secrets  []string `json:"secrets"`
			Requests []string `json:"requests"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(run(t, f.Opener(), true)), &d); err != nil || len(d.Sessions) != 1 {
		t.Fatalf("status --json: %v", err)
	}
	if s := d.Sessions[0]; len(s.Secrets) != 1 || !strings.HasPrefix(s.Secrets[0], "ANTHROPIC_API_KEY used") || len(s.Requests) != 1 || s.Requests[0] != ruled {
		t.Errorf("status --json: secrets %q, requests %q", s.Secrets, s.Requests)
	}
}
