package staging_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

// awkward names a tree must carry intact.
var awkward = []string{"sp ace.txt", "quo'te\".txt", "new\nline.txt", "ünï💡.txt", "bad\xffutf8.txt", "-dash.txt"}

func makeTree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "proj")
	w := func(rel, data string, mode os.FileMode) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	w("main.go", "package main\n", 0o644)
	w("run.sh", "#!/bin/sh\necho hi\n", 0o755)
	w("src/lib/util.go", "package lib\n", 0o644)
	w(".gitignore", ".env\nnode_modules/\n*.log\n", 0o644)
	w(".env", "SECRET=1\n", 0o600)
	w("node_modules/pkg/index.js", "x\n", 0o644)
	w("debug.log", "log\n", 0o644)
	for _, n := range awkward {
		w("names/"+n, "content of "+n+"\n", 0o644)
	}
	must(t, os.MkdirAll(filepath.Join(root, "empty", "deeper"), 0o755))
	must(t, os.Symlink("main.go", filepath.Join(root, "link-to-main")))
	must(t, os.Symlink("../outside", filepath.Join(root, "link-out")))
	must(t, syscall.Mkfifo(filepath.Join(root, "a-fifo"), 0o644))
	git(t, root, "init", "-q")
	git(t, root, "add", "-A")
	git(t, root, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "init")
	return root
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

type fixture struct {
	srv   *sshd.Server
	conn  *guest.Conn
	store staging.Store
	root  string
	gpath string
}

func setup(t *testing.T) *fixture {
	srv := sshd.Start(t)
	f := &fixture{srv: srv, conn: guesttest.Connect(t, srv, guest.Options{}), root: makeTree(t)}
	f.store = staging.Store{Dir: filepath.Join(t.TempDir(), "state")}
	f.gpath = fmt.Sprintf("%s/stage-%d/proj", srv.Home, time.Now().UnixNano())
	t.Cleanup(func() { srv.Run(t, "rm", "-rf", filepath.Dir(f.gpath)) })
	return f
}

func (f *fixture) open(t *testing.T, fresh bool) (*staging.Session, staging.Outcome) {
	t.Helper()
	s, out, err := staging.Open(context.Background(), f.conn, f.store, staging.OpenOptions{Instance: "test", Workdir: f.root, GuestPath: f.gpath, Fresh: fresh})
	if err != nil {
		t.Fatal(err)
	}
	return s, out
}

func (f *fixture) guest(t *testing.T, script string) string {
	return f.srv.Run(t, "bash", "-c", "cd "+f.gpath+" && "+script)
}

func kinds(cs *staging.ChangeSet) string {
	var parts []string
	for _, c := range cs.Changes {
		parts = append(parts, string(c.Kind)+" "+string(c.Path))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

func TestStageResumeAndDetect(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	s, out := f.open(t, false)
	if out != staging.Staged {
		t.Fatalf("outcome %s", out)
	}
	if fmt.Sprint(s.State.Skipped) != "[a-fifo]" {
		t.Errorf("skipped %v", s.State.Skipped)
	}
	// What is in the guest: tracked and untracked-not-ignored files, .git, symlinks, modes.
	listing := f.guest(t, "find . -path ./.git -prune -o -print0 | sort -z | tr '\\0' '|'")
	for _, want := range []string{"./main.go", "./run.sh", "./src/lib/util.go", "./link-to-main", "./link-out", "./.gitignore"} {
		if !strings.Contains(listing, "|"+want+"|") {
			t.Errorf("%s missing from the guest: %s", want, listing)
		}
	}
	for _, unwanted := range []string{".env", "node_modules", "debug.log", "a-fifo"} {
		if strings.Contains(listing, unwanted) {
			t.Errorf("%s staged: %s", unwanted, listing)
		}
	}
	for _, n := range awkward {
		if got := f.guest(t, "cat names/"+fmt.Sprintf("%q", n)+" 2>/dev/null || cat \"names/$(printf '%s' "+shq(n)+")\""); got != "content of "+n+"\n" {
			t.Errorf("%q: %q", n, got)
		}
	}
	if got := f.guest(t, "stat -c %a run.sh main.go; readlink link-to-main link-out; git status --porcelain | wc -l"); got != "755\n644\nmain.go\n../outside\n0\n" {
		t.Errorf("modes/links/git: %q", got)
	}
	cs, err := s.GuestChanges(ctx)
	must(t, err)
	if len(cs.Changes) != 0 {
		t.Fatalf("fresh stage has changes: %s", kinds(cs))
	}

	// The agent works in the guest.
	f.guest(t, "echo more >> main.go && echo new > added.txt && rm src/lib/util.go && chmod +x main.go && ln -sfn run.sh link-to-main && touch run.sh && mkdir -p newdir/inner && echo x > newdir/inner/f && rm -rf empty/deeper && echo 'x' > bad.log")
	cs, err = s.GuestChanges(ctx)
	must(t, err)
	want := "added added.txt; added newdir/inner/f; deleted empty/deeper; deleted src/lib/util.go; mode-changed main.go; symlink-changed link-to-main"
	if got := kinds(cs); got != want {
		t.Errorf("changes:\n got %s\nwant %s", got, want)
	}

	// A restarted server finds the session and the agent's work.
	s2, out := f.open(t, false)
	if out != staging.Resumed {
		t.Fatalf("outcome %s", out)
	}
	cs, err = s2.GuestChanges(ctx)
	must(t, err)
	if got := kinds(cs); got != want {
		t.Errorf("after resume: %s", got)
	}
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func TestSyncAndConflicts(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	s, _ := f.open(t, false)
	// Host: edit one file, add one, delete one, and edit one the agent also edits.
	must(t, os.WriteFile(filepath.Join(f.root, "run.sh"), []byte("#!/bin/sh\necho host\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(f.root, "host-new.txt"), []byte("from host\n"), 0o644))
	must(t, os.Remove(filepath.Join(f.root, "src/lib/util.go")))
	must(t, os.WriteFile(filepath.Join(f.root, "main.go"), []byte("package main // host\n"), 0o644))
	f.guest(t, "echo '// guest' >> main.go")

	rep, err := s.Sync(ctx)
	must(t, err)
	if fmt.Sprint(rep.Pushed) != "[host-new.txt run.sh]" || fmt.Sprint(rep.Removed) != "[src/lib/util.go]" || fmt.Sprint(rep.Conflicts) != "[main.go]" {
		t.Errorf("sync: %+v", rep)
	}
	if got := f.guest(t, "cat run.sh host-new.txt main.go; test -e src/lib/util.go || echo gone"); got != "#!/bin/sh\necho host\nfrom host\npackage main\n// guest\ngone\n" {
		t.Errorf("guest after sync: %q", got)
	}
	// Only the agent's own change remains pending.
	cs, err := s.GuestChanges(ctx)
	must(t, err)
	if got := kinds(cs); got != "modified main.go" {
		t.Errorf("pending after sync: %s", got)
	}
	// A second sync changes nothing more.
	rep, err = s.Sync(ctx)
	must(t, err)
	if len(rep.Pushed)+len(rep.Removed) != 0 || fmt.Sprint(rep.Conflicts) != "[main.go]" {
		t.Errorf("second sync: %+v", rep)
	}
}

func TestGoneCopyIsRestagedNotDeleted(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	s, _ := f.open(t, false)
	f.guest(t, "echo agent-work > work.txt")
	// The guest loses the copy and the marker (a recreated instance).
	f.srv.Run(t, "bash", "-c", "rm -rf "+f.gpath+" $HOME/.cache/limactl-mcp/sessions/"+s.State.ID)
	s2, out := f.open(t, false)
	if out != staging.Restaged {
		t.Fatalf("outcome %s", out)
	}
	cs, err := s2.GuestChanges(ctx)
	must(t, err)
	if len(cs.Changes) != 0 {
		t.Errorf("restaged copy has changes: %s", kinds(cs))
	}
	// The agent deleting its whole directory is a change, not a loss of the session.
	f.srv.Run(t, "rm", "-rf", f.gpath)
	s3, out := f.open(t, false)
	if out != staging.Resumed {
		t.Fatalf("outcome %s", out)
	}
	cs, err = s3.GuestChanges(ctx)
	must(t, err)
	if c := cs.Counts(); c[staging.Deleted] == 0 || c[staging.Added] != 0 {
		t.Errorf("after rm -rf: %v", c)
	}
	// --fresh throws the agent's work away and stages again.
	s4, out := f.open(t, true)
	if out != staging.Restaged {
		t.Fatalf("fresh outcome %s", out)
	}
	cs, err = s4.GuestChanges(ctx)
	must(t, err)
	if len(cs.Changes) != 0 {
		t.Errorf("fresh copy has changes: %s", kinds(cs))
	}
	must(t, s4.Discard(ctx))
	if _, _, err := f.store.Load(f.root); err == nil {
		t.Error("state survived discard")
	}
	if out := f.srv.Run(t, "bash", "-c", "test -e "+f.gpath+" && echo present || echo absent"); out != "absent\n" {
		t.Errorf("guest copy after discard: %s", out)
	}
}
