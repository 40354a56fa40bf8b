package background

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A process's directory is the agent's to write: a link it planted at the name of the file
// the supervisor writes next (once ".tmp-PID", the supervisor's pid) is never written through;
// the record is the supervisor's and the link's target stays as it was.
func TestRecordNeverWrittenThroughAPlantedLink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "exit.json")
	if err := os.Symlink(victim, fmt.Sprintf("%s.tmp-%d", p, os.Getpid())); err != nil {
		t.Fatal(err)
	}
	if err := writeJSONFile(p, bgExit{ExitCode: 3, Ended: 1}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "untouched" {
		t.Fatalf("the record was written through the planted link: %q", b)
	}
	var ex bgExit
	if err := readJSONFile(p, &ex); err != nil || ex.ExitCode != 3 {
		t.Fatalf("the record: %+v %v", ex, err)
	}
}
