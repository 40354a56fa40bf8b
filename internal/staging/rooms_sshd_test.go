package staging_test

import (
	"context"
	"os/exec"
	"path"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// asNobody runs a shell command as the user nobody (another user of the guest: what another
// session's agent user is) and returns its output and whether it succeeded.
func asNobody(t *testing.T, script string) (string, bool) {
	t.Helper()
	out, err := exec.Command("runuser", "-u", "nobody", "--", "sh", "-c", script).CombinedOutput()
	return string(out), err == nil
}

// Each session its own room (issue 23, finding 1): the staged copy, the directory of
// relocated copies and the store of markers, checkpoints and background records are the
// session user's alone (0700), so another user of the guest can neither list, read nor stat
// what is in them, though the home above them is open (0755); a copy and a store that an older
// version left open are closed again at the next connect.
func TestSessionRoomClosedToOtherUsers(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	s, _ := f.open(t, false)
	if _, err := s.Checkpoint(ctx, "room", false); err != nil {
		t.Fatal(err)
	}
	store := path.Join(f.srv.Home, ".cache/limactl-mcp")
	modes := func() string {
		return f.srv.Run(t, "stat", "-c", "%a %n", f.gpath, store)
	}
	want := "700 " + f.gpath + "\n700 " + store + "\n"
	if got := modes(); got != want {
		t.Errorf("modes after staging:\n%s\nwant\n%s", got, want)
	}
	tries := 0
	for _, target := range []string{f.gpath + "/main.go", f.gpath + "/src/lib/util.go", f.gpath + "/.git/HEAD", f.gpath + "/.git/config", f.gpath + "/src",
		store + "/sessions/" + s.State.ID, store + "/checkpoints/" + s.State.ID} {
		for _, c := range []string{"ls -la", "cat", "stat", "find"} {
			tries++
			out, ok := asNobody(t, c+" "+shq(target))
			if shown := strings.ReplaceAll(out, target, "<target>"); ok || strings.Contains(shown, "package ") || strings.Contains(shown, "util.go") {
				t.Errorf("nobody: `%s %s` was not refused:\n%s", c, target, out)
			}
		}
	}
	for _, c := range []string{"ls -la", "find"} {
		tries++
		if out, ok := asNobody(t, c+" "+shq(f.gpath)); ok || strings.Contains(out, "main.go") || strings.Contains(out, "src") {
			t.Errorf("nobody: `%s %s` was not refused:\n%s", c, f.gpath, out)
		}
	}
	t.Logf("%d tries by another user, each refused", tries)

	// An older version's open copy and store are closed at the next connect.
	f.srv.Run(t, "chmod", "755", f.gpath, store)
	if _, out := f.open(t, false); out != staging.Resumed {
		t.Fatalf("outcome %s", out)
	}
	if got := modes(); got != want {
		t.Errorf("modes after the next connect:\n%s\nwant\n%s", got, want)
	}

	// A named session's copy is relocated: the directory of relocated copies is closed too.
	named, _, err := staging.Open(ctx, f.conn, f.store, staging.OpenOptions{Instance: "test", Workdir: f.root, Session: "room"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = named.Discard(ctx) }()
	reloc := path.Dir(named.State.GuestPath)
	if path.Base(reloc) != staging.RelocatedDir {
		t.Fatalf("named session at %s", named.State.GuestPath)
	}
	if got := f.srv.Run(t, "stat", "-c", "%a", reloc, named.State.GuestPath); got != "700\n700\n" {
		t.Errorf("relocated: %q, want 700 and 700", got)
	}
	if out, ok := asNobody(t, "ls "+shq(reloc)); ok {
		t.Errorf("nobody lists %s:\n%s", reloc, out)
	}
}
