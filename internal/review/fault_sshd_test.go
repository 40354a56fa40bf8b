package review_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// Crash and fault cases: an apply killed with SIGKILL at several points, the guest gone in the
// middle of one, the host's disk full. Each time every file is old or new, nothing is lost, and
// the next review or undo finishes or rolls back.

// childEnv carries what the apply child needs to open the same session.
const childEnv = "LIMACTL_MCP_TEST_APPLY_CHILD"

type childSpec struct {
	Addr, User, KeyPath, HostKey string
	Store, Workdir, GuestPath    string
}

// TestApplyChildProcess is not a test of its own: it is the process the fault tests kill (the
// test binary run again with childEnv set). Without childEnv it does nothing.
func TestApplyChildProcess(t *testing.T) {
	raw := os.Getenv(childEnv)
	if raw == "" {
		return
	}
	var spec childSpec
	must(t, json.Unmarshal([]byte(raw), &spec))
	key, err := os.ReadFile(spec.KeyPath)
	must(t, err)
	signer, err := ssh.ParsePrivateKey(key)
	must(t, err)
	hostKey, _, _, _, err := ssh.ParseAuthorizedKey([]byte(spec.HostKey))
	must(t, err)
	conn := guest.New(func(context.Context) (*sshlink.Target, error) {
		return &sshlink.Target{Name: "child", Addr: spec.Addr, User: spec.User, Signers: []ssh.Signer{signer}, HostKeyCallback: ssh.FixedHostKey(hostKey)}, nil
	}, guest.Options{NoLoginShell: true})
	defer conn.Close()
	ctx := context.Background()
	sess, _, err := staging.Open(ctx, conn, staging.Store{Dir: spec.Store}, staging.OpenOptions{Workdir: spec.Workdir, GuestPath: spec.GuestPath})
	must(t, err)
	cs, err := review.Build(ctx, sess, nil)
	must(t, err)
	_, err = review.Apply(ctx, sess, cs, acceptAll(cs))
	must(t, err)
}

func faultFx(t *testing.T, files int) *fx {
	f := newFx(t)
	for i := range files {
		f.write(fmt.Sprintf("many/f%03d.txt", i), "old\n", 0o644)
	}
	must(t, f.sess.Discard(context.Background()))
	f.open()
	f.guest("for f in many/f*.txt; do echo new > $f; done && head -c 30000000 /dev/urandom > big.bin")
	return f
}

// oldOrNew checks every file of many/ is "old\n" or "new\n" and returns how many are new.
func oldOrNew(t *testing.T, f *fx, files int) int {
	t.Helper()
	news := 0
	for i := range files {
		switch got := f.read(fmt.Sprintf("many/f%03d.txt", i)); got {
		case "new\n":
			news++
		case "old\n":
		default:
			t.Errorf("many/f%03d.txt is neither old nor new: %q", i, got)
		}
	}
	return news
}

func noTemps(t *testing.T, root string) {
	t.Helper()
	_ = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.Contains(filepath.Base(p), ".limactl-mcp-") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

// killApply runs an apply of f's changes in a child process and kills it with SIGKILL once
// killAfter files are written (0: once the journal exists, before any host write). It says
// false when the apply finished first.
func killApply(t *testing.T, f *fx, killAfter int) bool {
	t.Helper()
	spec, _ := json.Marshal(childSpec{Addr: f.srv.Addr, User: f.srv.User, KeyPath: f.srv.ClientKeyPath,
		HostKey: string(ssh.MarshalAuthorizedKey(f.srv.HostKey)), Store: f.store.Dir, Workdir: f.host, GuestPath: f.gpath})
	cmd := exec.Command(os.Args[0], "-test.run=^TestApplyChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	backups := f.sess.Store().BackupDir(f.sess.State.ID)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("the apply child failed before it was killed (%v):\n%s", err, out.String())
			}
			return false
		default:
		}
		var reached bool
		if killAfter == 0 {
			ents, _ := os.ReadDir(backups)
			reached = len(ents) > 0 // the journal exists: content is being fetched
		} else {
			// Written in path order: the k-th file new means k written.
			reached = f.read(fmt.Sprintf("many/f%03d.txt", killAfter-1)) == "new\n"
		}
		if reached {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		if err := <-exited; err != nil {
			t.Fatalf("the apply child failed before it was killed (%v):\n%s", err, out.String())
		}
		return false // it finished between the look and the kill
	}
	if err := <-exited; err == nil {
		return false // it had finished: the kill came after its exit
	}
	return true
}

func TestApplyKilledAtSeveralPoints(t *testing.T) {
	const files = 400
	// 0: while the content is being fetched, before any host write; then after k writes.
	for _, killAfter := range []int{0, 1, 60, files - 1} {
		t.Run(fmt.Sprintf("after-%d-writes", killAfter), func(t *testing.T) {
			// The last kill point is a race with the apply's own end (one write left): on a
			// loaded machine the apply can finish between the look and the kill. That is no
			// outcome of the apply's, so the case is tried again on a fresh session, a few times.
			var f *fx
			for attempt := 1; ; attempt++ {
				f = faultFx(t, files)
				if killApply(t, f, killAfter) {
					break
				}
				if attempt == 3 {
					t.Fatalf("the apply finished before it was killed, %d times", attempt)
				}
				t.Logf("attempt %d: the apply finished before it was killed; again", attempt)
			}
			news := oldOrNew(t, f, files)
			t.Logf("killed with %d of %d files new", news, files)
			// The next review rolls the interrupted apply back, then applies everything.
			_, rolled, err := review.RecoverInterrupted(f.sess)
			must(t, err)
			if news > 0 && !rolled {
				t.Error("an interrupted apply with host writes was not found")
			}
			if n := oldOrNew(t, f, files); n != 0 {
				t.Errorf("%d files still new after the rollback", n)
			}
			noTemps(t, f.host)
			f.open() // as a new process would
			cs := f.build()
			rep, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
			must(t, err)
			if n := oldOrNew(t, f, files); n != files || len(rep.Refused) != 0 {
				t.Errorf("after the next apply: %d of %d new, refused %v (items %s)", n, files, rep.Refused, items(cs))
			}
			if _, err := review.Undo(context.Background(), f.sess); err != nil {
				t.Fatal(err)
			}
			if n := oldOrNew(t, f, files); n != 0 {
				t.Errorf("undo left %d new", n)
			}
		})
	}
}

// The guest goes away while a large file is being fetched: a clear refusal for what needed it,
// nothing half-written, and the change stays pending.
func TestApplyGuestGoneMidway(t *testing.T) {
	f := faultFx(t, 20)
	f.guest("head -c 150000000 /dev/zero > huge.bin")
	cs := f.build()
	done := make(chan struct{})
	var rep *review.Report
	var err error
	go func() {
		defer close(done)
		rep, err = review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	}()
	waitFetching(t, f) // then the guest goes away
	f.srv.Stop()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the apply hangs once the guest is gone")
	}
	if err != nil {
		t.Logf("apply: %v", err)
	} else if len(rep.Refused) == 0 {
		t.Errorf("nothing refused although the guest went away: written %v", rep.Written)
	} else {
		t.Logf("refused: %s", strings.Join(rep.Refused[:min(3, len(rep.Refused))], " | "))
	}
	oldOrNew(t, f, 20)
	noTemps(t, f.host)
	if _, err := os.Stat(filepath.Join(f.host, "huge.bin")); err == nil {
		if fi, _ := os.Stat(filepath.Join(f.host, "huge.bin")); fi.Size() != 150000000 {
			t.Errorf("huge.bin half-written: %d bytes", fi.Size())
		}
	}
}

// The host's disk is full: the write that does not fit fails cleanly, every file is old or new,
// no temporary file is left, and the change stays pending for the next review.
func TestApplyDiskFull(t *testing.T) {
	f := newFx(t)
	// A small tmpfs as the project's directory: stage it there.
	small := filepath.Join(t.TempDir(), "small")
	must(t, os.MkdirAll(small, 0o755))
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", small).CombinedOutput(); err != nil {
		t.Fatalf("mounting a small tmpfs (the test runs as root in CI): %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", small).Run() })
	must(t, f.sess.Discard(context.Background()))
	f.host = filepath.Join(small, "proj")
	f.write("a.txt", "old\n", 0o644)
	f.write("b.txt", "old\n", 0o644)
	f.open()
	f.guest("echo new > a.txt && head -c 3000000 /dev/urandom > big.bin && echo new > b.txt")
	cs := f.build()
	rep, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	if f.read("a.txt") != "new\n" || f.read("b.txt") != "new\n" {
		t.Errorf("the small files: %q %q (%s; written %v refused %v)", f.read("a.txt"), f.read("b.txt"), items(cs), rep.Written, rep.Refused)
	}
	if _, err := os.Stat(filepath.Join(f.host, "big.bin")); err == nil {
		t.Error("big.bin exists although it cannot fit")
	}
	if !strings.Contains(strings.Join(rep.Refused, "\n"), "big.bin") {
		t.Errorf("big.bin not reported: %v", rep.Refused)
	}
	noTemps(t, f.host)
	if got := items(f.build()); got != "added big.bin" {
		t.Errorf("pending after the full disk: %s", got)
	}
}
