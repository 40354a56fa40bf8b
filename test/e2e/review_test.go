//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"
)

// Hostile states made for real in the guest copy; after `review --yes`, the host is checked.
func TestReviewHostileGuest(t *testing.T) {
	dir := project(t, map[string]string{"main.go": "package main\n", "keep.txt": "keep\n", "sub/a.txt": "a\n"})
	mustT(t, os.Symlink("/tmp", filepath.Join(dir, "hostlink")))
	chownToUser(t, dir)
	gitInit(t, dir)
	outside := fmt.Sprintf("/tmp/mcp-e2e-outside-%d", time.Now().UnixNano())
	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName)
	toolsuite.MustOK(t, s.Session, "list_directory", map[string]any{"path": dir})
	shellOK(t, s.Session, dir, strings.Join([]string{
		"ln -s /etc/passwd abs-link",
		"ln -s ../../../../" + outside + " up-link",
		"ln -s sub/a.txt ok-link",
		"mkfifo a-fifo",
		"printf 'x' > suid && chmod 4755 suid",
		"printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
		"git config core.pager 'echo pwned'",
		`printf 'odd' > "$(printf 'odd\033[31mred\nname.txt')"`,
		"head -c 20000000 /dev/urandom > big.bin",
		"rm hostlink && mkdir hostlink && echo pwned > hostlink/evil.txt",
		"rm -rf sub && ln -s /etc sub",
	}, " && "))
	out, stderr, code := plugin(t, dir, "review", instanceName, "--dry-run")
	if code != 0 {
		t.Fatalf("dry-run: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"abs-link", "refused", ".git/hooks/pre-commit", ".git/config", `"odd\x1b[31mred\nname.txt"`} {
		if !strings.Contains(out, want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[31m") {
		t.Errorf("a raw escape sequence reached the terminal:\n%q", out)
	}
	out, stderr, code = plugin(t, dir, "review", instanceName, "--yes")
	if code != 0 {
		t.Fatalf("review --yes: exit %d\n%s\n%s", code, out, stderr)
	}
	// Checked on the host.
	for _, p := range []string{"abs-link", "up-link", "a-fifo"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s reached the host", p)
		}
	}
	if _, err := os.Stat("/tmp/evil.txt"); err == nil {
		t.Error("a write went through the host's symlink hostlink -> /tmp")
	}
	if tgt, _ := os.Readlink(filepath.Join(dir, "ok-link")); tgt != "sub/a.txt" {
		t.Errorf("ok-link -> %q", tgt)
	}
	if fi, err := os.Stat(filepath.Join(dir, "suid")); err != nil || fi.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky) != 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("suid on the host: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git/hooks/pre-commit")); err == nil {
		t.Error("a git hook reached the host")
	}
	if strings.Contains(readHost(t, filepath.Join(dir, ".git/config")), "pwned") {
		t.Error(".git/config was written")
	}
	if readHost(t, filepath.Join(dir, "odd\x1b[31mred\nname.txt")) != "odd" {
		t.Error("the oddly named file was not applied")
	}
	if fi, err := os.Stat(filepath.Join(dir, "big.bin")); err != nil || fi.Size() != 20000000 {
		t.Errorf("big.bin: %v %v", fi, err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "sub")); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Errorf("sub was replaced by a link outside: %v %v", fi, err)
	}
	if _, err := os.Lstat(outside); err == nil {
		t.Error("something was created outside the working directory")
	}
	t.Logf("review output:\n%s", out)
}

// An apply killed at a random moment leaves every file either old or new, and the next review
// rolls the interrupted apply back.
func TestReviewKilledDuringApply(t *testing.T) {
	files := map[string]string{}
	for i := range 300 {
		files[fmt.Sprintf("f%03d.txt", i)] = "old\n"
	}
	dir := project(t, files)
	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName)
	toolsuite.MustOK(t, s.Session, "list_directory", map[string]any{"path": dir})
	shellOK(t, s.Session, dir, "for f in f*.txt; do echo new > $f; done")
	cmd := vm.Command(ctxT(t, 5*time.Minute), "limactl-mcp", "review", instanceName, "--yes")
	cmd.Dir = dir
	mustT(t, cmd.Start())
	// Kill it once the apply has started writing.
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if readHost(t, filepath.Join(dir, "f000.txt")) == "new\n" {
			break
		}
		time.Sleep(time.Millisecond)
	}
	// runuser cannot pass SIGKILL on: kill the plugin process itself.
	killer := []string{"pkill", "-KILL", "-f", "limactl-mcp review " + instanceName + " --yes"}
	if vm.User != "" {
		killer = []string{"pkill", "-KILL", "-u", vm.User, "-f", "limactl-mcp review " + instanceName + " --yes"}
	}
	_ = exec.Command(killer[0], killer[1:]...).Run()
	_ = cmd.Wait()
	var olds, news int
	for name := range files {
		switch readHost(t, filepath.Join(dir, name)) {
		case "old\n":
			olds++
		case "new\n":
			news++
		default:
			t.Errorf("%s is neither old nor new: %q", name, readHost(t, filepath.Join(dir, name)))
		}
	}
	t.Logf("killed with %d files new, %d old", news, olds)
	out, stderr, code := plugin(t, dir, "review", instanceName, "--dry-run")
	if code != 0 {
		t.Fatalf("review after the kill: exit %d\n%s\n%s", code, out, stderr)
	}
	if news < len(files) {
		// Interrupted: rolled back to the old state.
		if !strings.Contains(stderr, "interrupted") {
			t.Errorf("no word of the interrupted apply:\n%s", stderr)
		}
		for name := range files {
			if got := readHost(t, filepath.Join(dir, name)); got != "old\n" {
				t.Errorf("%s after the rollback: %q", name, got)
			}
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".limactl-mcp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}
