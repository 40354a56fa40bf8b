package agentconfig

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Every file configure reads, for every agent, scope and option, is refused when it is larger
// than MaxConfigFileBytes (with an error naming it) and when it is a fifo (without hanging);
// the cap is what the file holds, so a file of exactly the cap is read.
func TestConfigFilesAreCapped(t *testing.T) {
	files := 0
	for _, a := range AgentNames() {
		for _, user := range []bool{false, true} {
			for _, disable := range []bool{false, true} {
				home, work := testDirs(t)
				opts := Options{Agent: a, Workdir: work, HomeDir: home, User: user, DisableBuiltinTools: disable}
				cs, err := Plan(opts)
				if err != nil {
					t.Fatalf("%s: %v", a, err)
				}
				for _, c := range cs {
					files++
					if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
						t.Fatal(err)
					}
					// Sparse: the size is what counts.
					if err := os.WriteFile(c.Path, nil, 0o644); err != nil {
						t.Fatal(err)
					}
					if err := os.Truncate(c.Path, MaxConfigFileBytes+1); err != nil {
						t.Fatal(err)
					}
					_, err := Plan(opts)
					if err == nil || !strings.Contains(err.Error(), "refusing to read "+c.Path) || !strings.Contains(err.Error(), "4 MiB") {
						t.Errorf("%s (user %v, disable %v): an oversized %s: %v", a, user, disable, c.Path, err)
					}
					if _, err := StatusOf(opts); err == nil {
						t.Errorf("%s: --list read an oversized %s", a, c.Path)
					}
					// A fifo nobody writes: refused, at once.
					os.Remove(c.Path)
					if err := syscall.Mkfifo(c.Path, 0o644); err != nil {
						t.Fatal(err)
					}
					done := make(chan error, 1)
					go func() { _, err := Plan(opts); done <- err }()
					select {
					case err := <-done:
						if err == nil || !strings.Contains(err.Error(), "not a regular file") {
							t.Errorf("%s: a fifo at %s: %v", a, c.Path, err)
						}
					case <-time.After(time.Minute):
						t.Fatalf("%s: configure hangs on a fifo at %s", a, c.Path)
					}
					os.Remove(c.Path)
				}
			}
		}
	}
	t.Logf("%d configuration files checked", files)
	// A file of exactly the cap is read (and refused only as what it holds: not JSON).
	home, work := testDirs(t)
	p := filepath.Join(work, ".mcp.json")
	writeFile(t, p, "")
	if err := os.Truncate(p, MaxConfigFileBytes); err != nil {
		t.Fatal(err)
	}
	if _, err := Plan(Options{Agent: "claude", Workdir: work, HomeDir: home}); err == nil || strings.Contains(err.Error(), "refusing to read") {
		t.Errorf("a file of exactly the cap: %v", err)
	}
}
