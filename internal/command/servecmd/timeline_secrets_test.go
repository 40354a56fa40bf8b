package servecmd

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
)

// The values of the session's secrets are never in its timeline, however they were read: a
// value from a command or a file is in no environment variable the redactor would look at.
func TestTimelineRedactsSessionSecrets(t *testing.T) {
	dir := t.TempDir()
	const value = "ghp_secretReadByCommand7f3a9c" // read by `cmd:gh auth token`: in no variable
	tl := openTimeline(dir, slog.New(slog.NewTextHandler(io.Discard, nil)), value)
	tl.Record(timeline.Event{Kind: timeline.Command, Command: "curl -H 'Authorization: token " + value + "' https://api.github.com/user"})
	tl.Record(timeline.Event{Kind: timeline.Call, Tool: "write_file", Args: map[string]any{"path": "/w/.netrc", "content": "password " + value}, Error: "refused " + value})
	raw, err := os.ReadFile(filepath.Join(dir, timeline.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), value) {
		t.Fatalf("the timeline holds a secret's value:\n%s", raw)
	}
	if strings.Count(string(raw), timeline.Redacted) < 2 {
		t.Errorf("the secret's value is not marked as redacted:\n%s", raw)
	}
}
