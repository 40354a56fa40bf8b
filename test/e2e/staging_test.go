//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"
)

func TestStagingEndToEnd(t *testing.T) {
	dir := project(t, map[string]string{
		"main.go":               "package main\n\nfunc main() {}\n",
		"run.sh":                "#!/bin/sh\necho run\n",
		"sp ace.txt":            "space\n",
		"ünï 💡.txt":             "unicode\n",
		"quo'te.txt":            "quote\n",
		"src/lib/util.go":       "package lib\n",
		".gitignore":            ".env\nnode_modules/\n",
		".env":                  "SECRET=do-not-stage\n",
		"node_modules/pkg/x.js": "heavy\n",
		"empty/":                "",
		".limactl-mcp-ignore":   "private/\n",
		"private/notes.txt":     "private\n",
	})
	mustT(t, os.Symlink("main.go", filepath.Join(dir, "link")))
	chownToUser(t, dir)
	gitInit(t, dir)

	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName)
	r := toolsuite.MustOK(t, s.Session, "read_file", map[string]any{"path": dir + "/main.go"})
	if r.Structured["content"] != "package main\n\nfunc main() {}\n" {
		t.Fatalf("read_file on the staged copy: %v", r.Structured)
	}
	// The copy is at the same absolute path in the guest, with what should be there.
	got := guestShell(t, "cd "+shq(dir)+" && stat -c '%a %F %n' run.sh main.go link empty 'sp ace.txt' 'ünï 💡.txt' \"quo'te.txt\" && readlink link && git status --porcelain && ls -A | sort | tr '\\n' ' '")
	want := "755 regular file run.sh\n644 regular file main.go\n777 symbolic link link\n755 directory empty\n644 regular file sp ace.txt\n644 regular file ünï 💡.txt\n644 regular file quo'te.txt\nmain.go\n D private/notes.txt\n" + // tracked, but excluded by .limactl-mcp-ignore
		".git .gitignore .limactl-mcp-ignore empty link main.go quo'te.txt run.sh sp ace.txt src ünï 💡.txt "
	if got != want {
		t.Errorf("guest copy:\n got %q\nwant %q", got, want)
	}

	// The agent works through the tools.
	toolsuite.MustOK(t, s.Session, "write_file", map[string]any{"path": dir + "/new.txt", "content": "new\n"})
	toolsuite.MustOK(t, s.Session, "replace", map[string]any{"file_path": dir + "/main.go", "old_string": "func main() {}", "new_string": "func main() { println(\"hi\") }"})
	shellOK(t, s.Session, dir, "rm 'sp ace.txt' && ln -sfn run.sh link && chmod 600 .gitignore && go version 2>/dev/null; true")
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); err == nil {
		t.Fatal("write_file reached the host")
	}
	wantPending := map[string]float64{"added": 1, "modified": 1, "deleted": 1, "symlink-changed": 1, "mode-changed": 1}
	checkPending := func(when string) {
		st := statusOf(t, dir)
		p, _ := st["pending"].(map[string]any)
		if st["pending_total"] != 5.0 || len(p) != len(wantPending) {
			t.Errorf("%s: status %v", when, st)
		}
		for k, v := range wantPending {
			if p[k] != v {
				t.Errorf("%s: pending %s = %v, want %v", when, k, p[k], v)
			}
		}
	}
	checkPending("after the edits")
	r = toolsuite.MustOK(t, s.Session, "pending_changes", map[string]any{"path": dir + "/main.go"})
	if !strings.Contains(r.Structured["diff"].(string), "+func main() { println(\"hi\") }") {
		t.Errorf("pending diff: %v", r.Structured)
	}

	// A restarted server resumes the copy, with the agent's work in it.
	mustT(t, s.Session.Close())
	s2 := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName)
	r = toolsuite.MustOK(t, s2.Session, "read_file", map[string]any{"path": dir + "/new.txt"})
	if r.Structured["content"] != "new\n" {
		t.Errorf("after restart: %v", r.Structured)
	}
	if !strings.Contains(s2.Stderr.String(), "resumed") {
		t.Errorf("the second server did not say it resumed:\n%s", s2.Stderr.String())
	}
	checkPending("after a restart")

	// Host edits reach the guest with sync; an edit on both sides is a conflict, the guest's kept.
	mustT(t, os.WriteFile(filepath.Join(dir, "quo'te.txt"), []byte("quote, edited on the host\n"), 0o644))
	mustT(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main // host\n"), 0o644))
	out, stderr, code := plugin(t, dir, "sync", instanceName)
	if code != 0 || !strings.Contains(out, "Copied 1 host change") || !strings.Contains(out, "conflict: main.go") {
		t.Errorf("sync: exit %d\n%s\n%s", code, out, stderr)
	}
	if got := guestShell(t, "cat "+shq(dir+"/quo'te.txt")+" "+shq(dir+"/main.go")); got != "quote, edited on the host\npackage main\n\nfunc main() { println(\"hi\") }\n" {
		t.Errorf("guest after sync: %q", got)
	}

	// Review without a terminal writes nothing and says how to proceed.
	out, _, code = plugin(t, dir, "review", instanceName)
	if code != 2 || !strings.Contains(out, "--yes") || readHost(t, filepath.Join(dir, "sp ace.txt")) != "space\n" {
		t.Errorf("review without a terminal: exit %d\n%s", code, out)
	}
	out, _, code = plugin(t, dir, "review", instanceName, "--patch")
	if code != 0 || !strings.Contains(out, "+new\n") || !strings.Contains(out, "deleted file mode") {
		t.Errorf("--patch: exit %d\n%s", code, out)
	}
	// --yes applies what is not a conflict.
	out, stderr, code = plugin(t, dir, "review", instanceName, "--yes")
	if code != 0 || !strings.Contains(out, "conflict (not applied): main.go") {
		t.Errorf("review --yes: exit %d\n%s\n%s", code, out, stderr)
	}
	if readHost(t, filepath.Join(dir, "new.txt")) != "new\n" || readHost(t, filepath.Join(dir, "main.go")) != "package main // host\n" {
		t.Errorf("host after review --yes: new.txt %q main.go %q", readHost(t, filepath.Join(dir, "new.txt")), readHost(t, filepath.Join(dir, "main.go")))
	}
	if _, err := os.Lstat(filepath.Join(dir, "sp ace.txt")); !os.IsNotExist(err) {
		t.Errorf("sp ace.txt still on the host")
	}
	if tgt, _ := os.Readlink(filepath.Join(dir, "link")); tgt != "run.sh" {
		t.Errorf("link -> %q", tgt)
	}
	if fi, _ := os.Stat(filepath.Join(dir, ".gitignore")); fi.Mode().Perm() != 0o600 {
		t.Errorf(".gitignore mode %v", fi.Mode())
	}
	// Only the conflict is left.
	if st := statusOf(t, dir); st["pending_total"] != 1.0 {
		t.Errorf("after review: %v", st)
	}
	// Undo puts the host back.
	out, stderr, code = plugin(t, dir, "review", instanceName, "--undo")
	if code != 0 || readHost(t, filepath.Join(dir, "sp ace.txt")) != "space\n" {
		t.Errorf("undo: exit %d\n%s\n%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("new.txt survived the undo")
	}
}
