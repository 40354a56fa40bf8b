package review_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

type fx struct {
	t     *testing.T
	srv   *sshd.Server
	conn  *guest.Conn
	host  string
	gpath string
	store staging.Store
	sess  *staging.Session
}

func lines(n int, edit map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := edit[i]; ok {
			b.WriteString(s)
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func newFx(t *testing.T) *fx {
	f := bareFx(t, "review")
	f.write("main.go", "package main\n\nfunc main() {}\n", 0o644)
	f.write("long.txt", lines(60, nil), 0o644)
	f.write("run.sh", "#!/bin/sh\n", 0o644)
	f.write("src/lib/util.go", "package lib\n", 0o644)
	f.write("gone.txt", "to be deleted\n", 0o644)
	must(t, os.Symlink("/tmp", filepath.Join(f.host, "hostlink")))
	f.open()
	return f
}

// bareFx is a fixture with no files and no session yet: write the host's files, then open.
// The guest copy (under a directory named for kind) and the checkpoints of its applies are
// removed after the test.
func bareFx(t *testing.T, kind string) *fx {
	srv := sshd.Start(t)
	f := &fx{t: t, srv: srv, conn: guesttest.Connect(t, srv, guest.Options{})}
	f.host = filepath.Join(t.TempDir(), "proj")
	f.gpath = fmt.Sprintf("%s/%s-%d/proj", srv.Home, kind, time.Now().UnixNano())
	t.Cleanup(func() {
		srv.Run(t, "rm", "-rf", filepath.Dir(f.gpath), filepath.Join(srv.Home, ".cache", "limactl-mcp", "checkpoints", staging.SessionID(f.host)))
	})
	f.store = staging.Store{Dir: filepath.Join(t.TempDir(), "state")}
	return f
}

func (f *fx) open() {
	s, _, err := staging.Open(context.Background(), f.conn, f.store, staging.OpenOptions{Workdir: f.host, GuestPath: f.gpath})
	must(f.t, err)
	f.sess = s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fx) write(rel, data string, mode os.FileMode) {
	p := filepath.Join(f.host, rel)
	must(f.t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(f.t, os.WriteFile(p, []byte(data), mode))
	must(f.t, os.Chmod(p, mode))
}

func (f *fx) read(rel string) string {
	data, err := os.ReadFile(filepath.Join(f.host, rel))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(data)
}

func (f *fx) guest(script string) string {
	return f.srv.Run(f.t, "bash", "-c", "cd "+f.gpath+" && "+script)
}

func (f *fx) build() *review.Changeset {
	cs, err := review.Build(context.Background(), f.sess, nil)
	must(f.t, err)
	return cs
}

// acceptAll accepts every change it may: of a collision (names one on the host), the first.
func acceptAll(cs *review.Changeset) []review.Decision {
	var ds []review.Decision
	taken := map[string]bool{}
	for _, it := range cs.Items {
		if it.Refused != "" {
			continue
		}
		a := review.Accept
		if it.Conflict {
			a = review.TakeGuest
		}
		for _, o := range it.Collides {
			if taken[o] {
				a = review.Skip
			}
		}
		taken[it.Path] = a != review.Skip
		ds = append(ds, review.Decision{Path: it.Path, Action: a})
	}
	return ds
}

func items(cs *review.Changeset) string {
	var s []string
	for _, it := range cs.Items {
		x := string(it.Kind) + " " + it.Display
		if it.Conflict {
			x += " CONFLICT"
		}
		if it.Refused != "" {
			x += " REFUSED"
		}
		s = append(s, x)
	}
	sort.Strings(s)
	return strings.Join(s, "; ")
}

func TestAcceptAllThenNothingPending(t *testing.T) {
	f := newFx(t)
	f.guest("printf 'package main\\n\\nfunc main() { println(1) }\\n' > main.go && echo new > added.txt && rm gone.txt && chmod 755 run.sh && mkdir -p pkg && echo p > pkg/p.go && ln -s main.go link-in")
	cs := f.build()
	if got := items(cs); got != "added added.txt; added link-in; added pkg; added pkg/p.go; deleted gone.txt; mode-changed run.sh; modified main.go" {
		t.Fatalf("items: %s", got)
	}
	rep, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	if len(rep.Refused) != 0 {
		t.Errorf("refused: %v", rep.Refused)
	}
	if f.read("main.go") != "package main\n\nfunc main() { println(1) }\n" || f.read("added.txt") != "new\n" || f.read("pkg/p.go") != "p\n" {
		t.Errorf("host after apply: %q %q", f.read("main.go"), f.read("added.txt"))
	}
	if _, err := os.Stat(filepath.Join(f.host, "gone.txt")); !os.IsNotExist(err) {
		t.Errorf("gone.txt still on the host")
	}
	if fi, _ := os.Stat(filepath.Join(f.host, "run.sh")); fi.Mode().Perm() != 0o755 {
		t.Errorf("run.sh mode %v", fi.Mode())
	}
	if tgt, _ := os.Readlink(filepath.Join(f.host, "link-in")); tgt != "main.go" {
		t.Errorf("link-in -> %q", tgt)
	}
	// The accepted changes are the new baseline: nothing is pending, the next review is empty.
	gc, err := f.sess.GuestChanges(context.Background())
	must(t, err)
	if len(gc.Changes) != 0 {
		t.Errorf("pending after accepting all: %+v", gc.Changes)
	}
	if cs := f.build(); len(cs.Items) != 0 {
		t.Errorf("second review: %s", items(cs))
	}
	// Undo restores the host and makes the changes pending again.
	u, err := review.Undo(context.Background(), f.sess)
	must(t, err)
	if len(u.Refused) != 0 || f.read("main.go") != "package main\n\nfunc main() {}\n" || f.read("gone.txt") != "to be deleted\n" {
		t.Errorf("after undo: %+v %q %q", u, f.read("main.go"), f.read("gone.txt"))
	}
	if _, err := os.Stat(filepath.Join(f.host, "added.txt")); !os.IsNotExist(err) {
		t.Errorf("added.txt survived undo")
	}
	if fi, _ := os.Stat(filepath.Join(f.host, "run.sh")); fi.Mode().Perm() != 0o644 {
		t.Errorf("run.sh mode after undo %v", fi.Mode())
	}
	if got := items(f.build()); !strings.Contains(got, "modified main.go") {
		t.Errorf("after undo, pending again: %s", got)
	}
	if _, err := review.Undo(context.Background(), f.sess); err == nil {
		t.Error("a second undo found something to undo")
	}
}

func TestHostileGuest(t *testing.T) {
	f := newFx(t)
	name := "evil\x1b[31mred\nline.txt"
	f.guest("ln -s /etc/passwd abs-link && ln -s ../../../outside up-link && mkfifo a-fifo && printf x > suid && chmod 4755 suid && " +
		"printf 'n' > \"$(printf 'evil\\033[31mred\\nline.txt')\" && mkdir -p .git/hooks && printf '#!/bin/sh\\ncurl evil\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && rm hostlink && mkdir hostlink && echo pwned > hostlink/evil.txt")
	cs := f.build()
	byPath := map[string]*review.Item{}
	for _, it := range cs.Items {
		byPath[it.Path] = it
	}
	for _, p := range []string{"abs-link", "up-link", "a-fifo"} {
		if it := byPath[p]; it == nil || it.Refused == "" {
			t.Errorf("%s: not refused: %+v", p, it)
		}
	}
	if len(cs.Ignored) != 1 || cs.Ignored[0].Path != ".git/hooks/pre-commit" || !strings.Contains(cs.Ignored[0].Refused, "never written") {
		t.Errorf(".git hook not listed as ignored: %+v", cs.Ignored)
	}
	if it := byPath[name]; it == nil || strings.ContainsAny(it.Display, "\x1b\n") {
		t.Errorf("odd name not escaped: %+v", it)
	}
	// Accept everything, but not the change of hostlink itself: the host's hostlink stays a
	// symlink to /tmp, and nothing may be written through it.
	var ds []review.Decision
	for _, d := range acceptAll(cs) {
		if d.Path != "hostlink" {
			ds = append(ds, d)
		}
	}
	rep, err := review.Apply(context.Background(), f.sess, cs, ds)
	must(t, err)
	if _, err := os.Stat("/tmp/evil.txt"); err == nil {
		t.Fatal("a write went through the host's symlink to /tmp")
	}
	if it := byPath["hostlink/evil.txt"]; it == nil || !strings.Contains(it.Refused, "symbolic link") {
		t.Errorf("hostlink/evil.txt not refused: %+v", it)
	}
	if len(rep.Refused) != 0 {
		t.Errorf("refused at apply: %v", rep.Refused)
	}
	if fi, err := os.Stat(filepath.Join(f.host, "suid")); err != nil || fi.Mode()&os.ModeSetuid != 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("suid: %v %v", fi, err)
	}
	if f.read(name) != "n" {
		t.Errorf("odd name not applied: %q", f.read(name))
	}
	for _, p := range []string{"abs-link", "up-link", "a-fifo"} {
		if _, err := os.Lstat(filepath.Join(f.host, p)); err == nil {
			t.Errorf("%s reached the host", p)
		}
	}
}

func TestConflictsAndConcurrentHostEdits(t *testing.T) {
	f := newFx(t)
	f.guest("echo guest >> main.go && echo guest > run.sh && echo g > src/lib/util.go")
	f.write("main.go", "package main // host\n", 0o644)
	f.write("run.sh", "#!/bin/sh\n# host\n", 0o644)
	cs := f.build()
	if got := items(cs); got != "modified main.go CONFLICT; modified run.sh CONFLICT; modified src/lib/util.go" {
		t.Fatalf("items: %s", got)
	}
	// While the person looks, the host edits util.go too: it must be refused, not overwritten.
	f.write("src/lib/util.go", "package lib // edited during the review\n", 0o644)
	rep, err := review.Apply(context.Background(), f.sess, cs, []review.Decision{
		{Path: "main.go", Action: review.TakeGuest},
		{Path: "run.sh", Action: review.KeepHost},
		{Path: "src/lib/util.go", Action: review.Accept},
	})
	must(t, err)
	if f.read("main.go") != "package main\n\nfunc main() {}\nguest\n" {
		t.Errorf("take-guest: %q", f.read("main.go"))
	}
	if f.read("run.sh") != "#!/bin/sh\n# host\n" || f.guest("cat run.sh") != "#!/bin/sh\n# host\n" {
		t.Errorf("keep-host: host %q guest %q", f.read("run.sh"), f.guest("cat run.sh"))
	}
	if f.read("src/lib/util.go") != "package lib // edited during the review\n" || !strings.Contains(strings.Join(rep.Refused, "\n"), "changed on the host during the review") {
		t.Errorf("concurrent host edit: %q %v", f.read("src/lib/util.go"), rep.Refused)
	}
	// Decisions that do not fit the item are errors, not silent writes.
	if _, err := review.Apply(context.Background(), f.sess, f.build(), []review.Decision{{Path: "src/lib/util.go", Action: review.KeepHost}}); err != nil {
		t.Logf("as expected: %v", err)
	}
}

func TestAcceptSomeHunks(t *testing.T) {
	f := newFx(t)
	edited := lines(60, map[int]string{2: "line 2 guest\n", 30: "line 30 guest\n", 58: "line 58 guest\n"})
	must(t, os.WriteFile(filepath.Join(t.TempDir(), "x"), nil, 0o644))
	f.srv.Run(t, "bash", "-c", "cat > "+f.gpath+"/long.txt <<'EOF'\n"+edited+"EOF")
	cs := f.build()
	if len(cs.Items) != 1 || !cs.Items[0].Text || len(cs.Items[0].Hunks) != 3 {
		t.Fatalf("items: %s %+v", items(cs), cs.Items)
	}
	_, err := review.Apply(context.Background(), f.sess, cs, []review.Decision{{Path: "long.txt", Action: review.Accept, Hunks: []bool{true, false, true}}})
	must(t, err)
	want := lines(60, map[int]string{2: "line 2 guest\n", 58: "line 58 guest\n"})
	if got := f.read("long.txt"); got != want {
		t.Errorf("host: %q", got)
	}
	// The rejected hunk stays pending in the guest, alone.
	cs = f.build()
	if len(cs.Items) != 1 || len(cs.Items[0].Hunks) != 1 || !strings.Contains(cs.Items[0].Hunks[0].Render(), "+line 30 guest") {
		t.Errorf("pending after partial accept: %s %+v", items(cs), cs.Items)
	}
	// Reject and revert puts the staged version back in the guest.
	_, err = review.Apply(context.Background(), f.sess, cs, []review.Decision{{Path: "long.txt", Action: review.RejectRevert}})
	must(t, err)
	if got := f.guest("cat long.txt"); got != want {
		t.Errorf("guest after revert: %q", got)
	}
	if cs := f.build(); len(cs.Items) != 0 {
		t.Errorf("after revert: %s", items(cs))
	}
}

// An apply killed half-way is rolled back by the next review or undo.
func TestInterruptedApplyRollsBack(t *testing.T) {
	f := newFx(t)
	f.guest("echo guest > main.go && rm gone.txt && echo n > new.txt")
	cs := f.build()
	_, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	// Make it look as if the process died after its host writes, before committing.
	jdir, _ := filepath.Glob(filepath.Join(f.sess.Store().BackupDir(f.sess.State.ID), "*", "journal.json"))
	if len(jdir) != 1 {
		t.Fatalf("journals: %v", jdir)
	}
	data, _ := os.ReadFile(jdir[0])
	must(t, os.WriteFile(jdir[0], []byte(strings.Replace(string(data), `"state": "committed"`, `"state": "prepared"`, 1)), 0o600))
	// The person edited new.txt in the meantime: that one must be left alone.
	f.write("new.txt", "person's\n", 0o644)
	rep, rolled, err := review.RecoverInterrupted(f.sess)
	must(t, err)
	if !rolled || f.read("main.go") != "package main\n\nfunc main() {}\n" || f.read("gone.txt") != "to be deleted\n" || f.read("new.txt") != "person's\n" {
		t.Errorf("after rollback: %v %q %q %q", rep, f.read("main.go"), f.read("gone.txt"), f.read("new.txt"))
	}
}

// keep-host never copies into the guest a host file that was never staged: it may be a secret
// the staging rules kept out (here, one made after staging; a global gitignore works alike).
func TestKeepHostNeverCopiesUnstagedHostFile(t *testing.T) {
	f := newFx(t)
	f.write(".env", "TOKEN=host-secret\n", 0o600)
	f.guest("echo 'TOKEN=guest' > .env")
	cs := f.build()
	if got := items(cs); got != "added .env CONFLICT" {
		t.Fatalf("items: %s", got)
	}
	rep, err := review.Apply(context.Background(), f.sess, cs, []review.Decision{{Path: ".env", Action: review.KeepHost}})
	must(t, err)
	if strings.Contains(f.srv.Run(t, "bash", "-c", "cat "+f.gpath+"/.env 2>/dev/null; true"), "host-secret") {
		t.Fatal("keep-host copied the host's unstaged file into the guest")
	}
	if f.read(".env") != "TOKEN=host-secret\n" || len(rep.Refused) != 0 {
		t.Errorf("host %q, refused %v", f.read(".env"), rep.Refused)
	}
	if cs := f.build(); len(cs.Items) != 0 {
		t.Errorf("still pending: %s", items(cs))
	}
}

// A directory the guest replaced by a refused link keeps its files on the host: the type
// change is one unit, refused whole.
func TestRefusedLinkKeepsReplacedDirectory(t *testing.T) {
	f := newFx(t)
	f.guest("rm -rf src && ln -s /etc src")
	cs := f.build()
	for _, it := range cs.Items {
		if it.Refused == "" {
			t.Errorf("%s not refused (%s)", it.Display, it.Description)
		}
	}
	rep, err := review.Apply(context.Background(), f.sess, cs, acceptAll(cs))
	must(t, err)
	if f.read("src/lib/util.go") != "package lib\n" || len(rep.Written) != 0 {
		t.Errorf("the directory's files were touched: %q, written %v", f.read("src/lib/util.go"), rep.Written)
	}
	if got := items(f.build()); !strings.Contains(got, "src/lib/util.go REFUSED") {
		t.Errorf("not pending any more: %s", got)
	}
}
