//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"
)

// guestTreeListing describes the guest copy of dir (but .git) exactly: every entry's name,
// type, mode and link target, and every file's content hash.
func guestTreeListing(t *testing.T, dir string) string {
	t.Helper()
	return guestShell(t, fmt.Sprintf(`cd %s && find . -path ./.git -prune -o -printf '%%p %%y %%m %%l\n' | LC_ALL=C sort && find . -path ./.git -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum`, shq(dir)))
}

// The agent checkpoints, breaks its copy in every way (edits, deletes, chmod, a symlink, a new
// directory, a file where a directory was), and the exact tree comes back: by the agent's
// restore_checkpoint, and by the person's `limactl mcp restore`. review --since shows what
// changed since a checkpoint; a review apply takes an automatic checkpoint first.
func TestCheckpointEndToEnd(t *testing.T) {
	dir := project(t, map[string]string{
		"main.go": "package main\n", "run.sh": "#!/bin/sh\necho hi\n", "pkg/a/a.go": "package a\n",
		"pkg/b/b.go": "package b\n", "docs/readme.md": "# readme\n", "empty/": "",
	})
	mustT(t, os.Symlink("main.go", filepath.Join(dir, "link")))
	chownToUser(t, dir)
	gitInit(t, dir)
	discardOnCleanup(t, dir)
	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName)
	toolsuite.MustOK(t, s.Session, "list_directory", map[string]any{"path": dir})
	shellOK(t, s.Session, dir, "chmod 640 docs/readme.md && chmod 750 pkg/b")

	r := toolsuite.MustOK(t, s.Session, "checkpoint", map[string]any{"label": "clean"})
	id := fmt.Sprint(r.Structured["id"])
	t.Logf("checkpoint: %v", r.Structured)
	clean := guestTreeListing(t, dir)

	breakIt := strings.Join([]string{
		"echo broken > main.go", "rm pkg/a/a.go", "chmod 600 run.sh", "rm link && ln -s /etc/passwd link",
		"mkdir -p new/deep && echo x > new/deep/x.txt", "rmdir empty && echo file > empty", "chmod 700 docs",
		"rm -rf pkg/b && ln -s /tmp pkg/b",
	}, " && ")
	shellOK(t, s.Session, dir, breakIt+" && git rm -q --cached main.go")
	if guestTreeListing(t, dir) == clean {
		t.Fatal("the tree did not change")
	}

	// review --since: what changed in the guest copy since the checkpoint, read-only.
	out, stderr, code := plugin(t, dir, "review", instanceName, "--since", id)
	if code != 0 {
		t.Fatalf("review --since: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"since checkpoint " + id + " (clean)", "modified        main.go", "deleted         pkg/a/a.go", "added           new/deep/x.txt", "type-changed    empty"} {
		if !strings.Contains(out, want) {
			t.Errorf("review --since lacks %q:\n%s", want, out)
		}
	}
	out, _, code = plugin(t, dir, "review", instanceName, "--since", id, "--patch")
	if code != 0 || !strings.Contains(out, "-package main\n+broken\n") {
		t.Errorf("review --since --patch (exit %d):\n%s", code, out)
	}

	// The agent restores.
	r = toolsuite.MustOK(t, s.Session, "restore_checkpoint", map[string]any{"id": r.Structured["id"]})
	t.Logf("restore: %v", r.Structured)
	if got := guestTreeListing(t, dir); got != clean {
		t.Fatalf("after restore_checkpoint:\n%s\nwant:\n%s", got, clean)
	}
	if readHost(t, filepath.Join(dir, "main.go")) != "package main\n" {
		t.Error("the host changed")
	}
	// .git is left alone: the index change the agent made is still there.
	if got := shellOK(t, s.Session, dir, "git status --porcelain main.go"); !strings.Contains(got, "main.go") {
		t.Errorf(".git was restored too: git status %q", got)
	}

	// The person restores.
	shellOK(t, s.Session, dir, breakIt)
	out, stderr, code = plugin(t, dir, "restore", instanceName, id)
	if code != 0 || !strings.Contains(out, "The host was not changed.") {
		t.Fatalf("limactl mcp restore: exit %d\n%s\n%s", code, out, stderr)
	}
	if got := guestTreeListing(t, dir); got != clean {
		t.Fatalf("after limactl mcp restore:\n%s\nwant:\n%s", got, clean)
	}

	// A review apply takes an automatic checkpoint of the copy as reviewed.
	shellOK(t, s.Session, dir, "echo reviewed > main.go")
	out, stderr, code = plugin(t, dir, "review", instanceName, "--yes")
	if code != 0 || !strings.Contains(stderr, "The guest copy as reviewed is checkpoint") {
		t.Fatalf("review --yes: exit %d\n%s\n%s", code, out, stderr)
	}
	out, _, code = plugin(t, dir, "status", instanceName, "--json")
	var st struct {
		Sessions []struct {
			Workdir     string
			Checkpoints []struct {
				ID    int
				Label string
				Auto  bool
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	found := false
	for _, ss := range st.Sessions {
		if ss.Workdir != dir {
			continue
		}
		for _, c := range ss.Checkpoints {
			if c.Auto && c.Label == "before review apply" {
				found = true
			}
		}
		t.Logf("checkpoints: %+v", ss.Checkpoints)
	}
	if !found {
		t.Errorf("no automatic checkpoint before the review apply in status:\n%s", out)
	}
}
