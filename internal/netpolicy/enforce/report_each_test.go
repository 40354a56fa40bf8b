package enforce

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// `net report --users` writes one line per user asked for, in order: what Report gives that user
// (the host reads it back with ParseRecordLine, the same record), or an error line for that user
// alone (a name it refuses, one past the most one report reads); nothing else on the line.
func TestReportEach(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("net report runs as root: run this test as root (CI does)")
	}
	dir := t.TempDir()
	l := Layout{ConfigDir: filepath.Join(dir, "net"), LogDir: filepath.Join(dir, "log")}
	if err := os.MkdirAll(l.LogDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := logPolicyChange(l, "lmcp-a", "", "none"); err != nil {
		t.Fatal(err)
	}
	if err := logPolicyChange(l, "lmcp-b", "none", "allow:b.org"); err != nil {
		t.Fatal(err)
	}
	users := []string{"lmcp-a", "root", "lmcp-b", "lmcp-a", "lmcp-never"}
	var out bytes.Buffer
	ReportEach(l, users, &out)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(users) {
		t.Fatalf("%d lines for %d users:\n%s", len(lines), len(users), out.String())
	}
	for i, u := range users {
		got, gerr := netpolicy.ParseRecordLine([]byte(lines[i]), u)
		want, werr := Report(l, u, 0)
		switch {
		case werr != nil && (gerr == nil || gerr.Error() != werr.Error()):
			t.Errorf("%s: line %q gives %v, want Report's error %v", u, lines[i], gerr, werr)
		case werr == nil && gerr != nil:
			t.Errorf("%s: line %q: %v", u, lines[i], gerr)
		case werr == nil && !reflect.DeepEqual(got, want):
			t.Errorf("%s: line gives %+v, Report %+v", u, got, want)
		}
	}
	if got, _ := netpolicy.ParseRecordLine([]byte(lines[2]), "lmcp-b"); len(got.Changes) != 1 || got.Changes[0].To != "allow:b.org" {
		t.Errorf("lmcp-b's line holds changes %+v, not its own", got.Changes)
	}
	// Another user's line is never taken for this one's, record or error.
	if _, err := netpolicy.ParseRecordLine([]byte(lines[0]), "lmcp-b"); err == nil {
		t.Error("lmcp-a's record read as lmcp-b's")
	}
	if _, err := netpolicy.ParseRecordLine([]byte(lines[1]), "lmcp-a"); err == nil || !strings.Contains(err.Error(), "another user's") {
		t.Errorf("root's error line read for lmcp-a: %v", err)
	}

	// Past the most one report reads: an error line each, none read.
	many := make([]string, netpolicy.MaxReportEach+2)
	for i := range many {
		many[i] = fmt.Sprintf("lmcp-u%d", i)
	}
	out.Reset()
	ReportEach(l, many, &out)
	lines = strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(many) {
		t.Fatalf("%d lines for %d users", len(lines), len(many))
	}
	for i, u := range many {
		_, err := netpolicy.ParseRecordLine([]byte(lines[i]), u)
		if past := i >= netpolicy.MaxReportEach; past != (err != nil && strings.Contains(err.Error(), "more than")) {
			t.Errorf("user %d of %d: %v", i+1, len(many), err)
		}
	}
}
