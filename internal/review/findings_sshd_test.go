package review_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
)

// One test per finding of the host-sacred issue that lies in review's scope, each made for real
// in the guest (the sshd) and checked on the host. The generator (hostile_gen_sshd_test.go)
// covers their combinations.

// A guest-made sub/.git/config with core.fsmonitor set to a command is never written: the
// next git status in sub on the host runs nothing.
func TestFindingNestedGitConfigNeverApplied(t *testing.T) {
	f := newFx(t)
	mark := filepath.Join(t.TempDir(), "PWNED")
	f.write("sub/keep.txt", "k\n", 0o644)
	f.sess.Discard(context.Background())
	f.open()
	f.guest("mkdir -p sub/.git && printf '[core]\\n\\tfsmonitor = touch " + mark + "\\n\\trepositoryformatversion = 0\\n' > sub/.git/config && mkdir -p sub/.git/objects sub/.git/refs && echo 'ref: refs/heads/main' > sub/.git/HEAD")
	cs := f.build()
	for _, it := range cs.Items {
		if strings.Contains(it.Path, ".git") {
			t.Errorf("git metadata listed as a change: %s", it.Path)
		}
	}
	rep, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	if _, err := os.Lstat(filepath.Join(f.host, "sub/.git")); err == nil {
		t.Fatalf("sub/.git reached the host (written %v)", rep.Written)
	}
	_ = exec.Command("git", "-C", filepath.Join(f.host, "sub"), "status").Run()
	if _, err := os.Lstat(mark); err == nil {
		t.Fatal("git status on the host ran the guest's fsmonitor")
	}
}

// The chain of the issue, made in the guest: no host link resolves to the parent directory
// or to /etc/passwd after accepting everything.
func TestFindingChainedSymlinks(t *testing.T) {
	f := newFx(t)
	f.guest("mkdir -p d && ln -s .. d/up && ln -s d/up/.. esc && ln -s esc l1 && ln -s l1/.. l2 && ln -s l2/etc/passwd pw")
	cs := f.build()
	_, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	for _, l := range []string{"d/up", "esc", "l1", "l2", "pw"} {
		p := filepath.Join(f.host, l)
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err == nil && real != f.host && !strings.HasPrefix(real, f.host+"/") {
			t.Errorf("%s resolves to %s, outside %s", l, real, f.host)
		}
	}
}

// A save the person makes while a large guest file is being fetched is never overwritten, and
// nothing is backed up in its place.
func TestFindingHostEditDuringLongApply(t *testing.T) {
	f := newFx(t)
	f.guest("head -c 60000000 /dev/urandom > zz.bin && echo 'package main // agent' > main.go")
	cs := f.build()
	done := make(chan struct{})
	var rep *review.Report
	var err error
	go func() {
		defer close(done)
		rep, err = review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	}()
	waitFetching(t, f)
	f.write("main.go", "package main // the person's save\n", 0o644)
	<-done
	must(t, err)
	if got := f.read("main.go"); got != "package main // the person's save\n" {
		t.Errorf("the person's save was overwritten: %q", got)
	}
	if !strings.Contains(strings.Join(rep.Refused, "\n"), "main.go: changed on the host") {
		t.Errorf("not refused: %v", rep.Refused)
	}
	if got := items(f.build()); !strings.Contains(got, "modified main.go CONFLICT") {
		t.Errorf("the agent's main.go is no longer pending: %s", got)
	}
}

// A refused write leaves its path pending: a guest directory that became a file, refused
// because the host's directory holds a file of the person's, is still listed, and sync does
// not overwrite the agent's file.
func TestFindingRefusedWriteStaysPending(t *testing.T) {
	f := newFx(t)
	f.guest("rm -rf src && echo 'now a file' > src")
	f.write("src/persons-own.txt", "mine\n", 0o644)
	cs := f.build()
	rep, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	if f.read("src/lib/util.go") != "package lib\n" || f.read("src/persons-own.txt") != "mine\n" {
		t.Errorf("the host's directory lost files: %v", rep.Written)
	}
	if got := items(f.build()); !strings.Contains(got, "type-changed src") {
		t.Errorf("src is no longer pending: %s", got)
	}
	if _, err := f.sess.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.guest("cat src"); got != "now a file\n" {
		t.Errorf("sync overwrote the agent's file: %q", got)
	}
}

// Undo of an apply that created a directory removes it.
func TestFindingUndoRemovesCreatedDirectory(t *testing.T) {
	f := newFx(t)
	f.guest("mkdir -p newdir/deeper && echo x > newdir/deeper/x.txt")
	cs := f.build()
	_, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	u, err := review.Undo(context.Background(), f.sess)
	must(t, err)
	if _, err := os.Lstat(filepath.Join(f.host, "newdir")); err == nil {
		t.Errorf("newdir survived the undo (restored %v, refused %v)", u.Written, u.Refused)
	}
	// A directory that holds a file of the person's is kept, and said so.
	_, err = review.Apply(context.Background(), f.sess, f.build(), acceptAll(f.build()))
	must(t, err)
	f.write("newdir/persons.txt", "mine\n", 0o644)
	u, err = review.Undo(context.Background(), f.sess)
	must(t, err)
	if f.read("newdir/persons.txt") != "mine\n" || !strings.Contains(strings.Join(u.Refused, "\n"), "newdir") {
		t.Errorf("undo with the person's file: refused %v", u.Refused)
	}
}

// waitFetching waits until an apply of f's session is fetching content from the guest (its
// journal holds a new file's blob).
func waitFetching(t *testing.T, f *fx) {
	t.Helper()
	backups := f.sess.Store().BackupDir(f.sess.State.ID)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(backups, "*", "*.after")); len(m) > 0 {
			return
		}
	}
	t.Fatal("the apply never started fetching")
}

// World-writable guest modes land masked by the person's umask (022 here), not as 0777/0666.
func TestFindingModesMaskedByUmask(t *testing.T) {
	f := newFx(t)
	f.guest("echo w > ww && chmod 666 ww && echo x > wx && chmod 777 wx && mkdir wd && chmod 777 wd && chmod 666 long.txt")
	cs := f.build()
	_, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	for p, want := range map[string]os.FileMode{"ww": 0o644, "wx": 0o755, "wd": 0o755, "long.txt": 0o644} {
		if fi, err := os.Stat(filepath.Join(f.host, p)); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", p, fi.Mode(), err, want)
		}
	}
}

// A large guest file (fetched by streaming, not held in the changeset) that the agent swaps
// for a fifo after the changeset is built: Apply neither blocks on it nor writes it. The path
// is refused and stays pending, the host has no file there, and the rest is applied.
func TestFindingFifoSwappedBeforeApply(t *testing.T) {
	f := newFx(t)
	f.guest("head -c 5000000 /dev/urandom > big.bin && echo 'package main // agent' > main.go")
	cs := f.build()
	f.guest("rm big.bin && mkfifo big.bin")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan struct{})
	var rep *review.Report
	var err error
	start := time.Now()
	go func() {
		defer close(done)
		rep, err = review.Apply(ctx, f.sess, cs, acceptAll(cs))
	}()
	select {
	case <-done:
	case <-time.After(45 * time.Second):
		// Open the fifo's other end so that the guest's sftp server, and the test's cleanup, can
		// go on; the test has failed already.
		f.guest("exec 3<>big.bin")
		<-done
		t.Fatal("Apply blocked on a fifo the agent swapped in for a large file (until the test opened it in the guest)")
	}
	must(t, err)
	t.Logf("apply ended in %s; refused %v", time.Since(start).Round(time.Millisecond), rep.Refused)
	if !strings.Contains(strings.Join(rep.Refused, "\n"), "big.bin") {
		t.Errorf("big.bin not refused: written %v, refused %v", rep.Written, rep.Refused)
	}
	if _, err := os.Lstat(filepath.Join(f.host, "big.bin")); !os.IsNotExist(err) {
		t.Errorf("something is at big.bin on the host: %v", err)
	}
	if got := f.read("main.go"); got != "package main // agent\n" {
		t.Errorf("the rest was not applied: main.go is %q", got)
	}
	if got := items(f.build()); !strings.Contains(got, "big.bin") {
		t.Errorf("big.bin is no longer pending: %s", got)
	}
}

// Files whose names are not valid UTF-8 are applied with their content, large (streamed) or
// small: the runner's read request carried the name as a JSON string, which replaced the bad
// byte, so the file was "missing" in the guest and its apply failed.
func TestNonUTF8NamesApplied(t *testing.T) {
	f := newFx(t)
	f.guest(`head -c 5000000 /dev/urandom > "$(printf 'big\377.bin')" && printf 'small\n' > "$(printf 'small\377.txt')"`)
	cs := f.build()
	rep, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	if len(rep.Refused) != 0 {
		t.Errorf("refused: %v", rep.Refused)
	}
	if got := f.read("small\xff.txt"); got != "small\n" {
		t.Errorf("small\\xff.txt on the host: %q", got)
	}
	if fi, err := os.Stat(filepath.Join(f.host, "big\xff.bin")); err != nil || fi.Size() != 5000000 {
		t.Errorf("big\\xff.bin on the host: %v %v", fi, err)
	}
}
