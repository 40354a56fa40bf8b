package synccmd_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/synccmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// sync copies host edits into the guest and keeps the guest's version of a path both sides
// changed.
func TestSync(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"edited.txt": "1\n", "gone.txt": "x\n", "both.txt": "b\n"})
	f.Guest("echo guest > both.txt && echo guest > $'tab\\tname.txt'")
	f.WriteHost("edited.txt", "2\n")
	f.WriteHost("both.txt", "host\n")
	f.WriteHost("tab\tname.txt", "host\n")
	f.WriteHost("new.txt", "new\n")
	removeHost(t, f, "gone.txt")

	ios, _, out, errOut := iostreams.Test()
	if err := synccmd.Run(context.Background(), &synccmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, Open: f.Opener()}); err != nil {
		t.Fatal(err)
	}
	want := "Copied 2 host changes into the guest and removed 1 path the host deleted.\n" +
		"conflict: both.txt changed on both sides; the guest's version is kept (see `limactl mcp review sshd-test`)\n" +
		"conflict: \"tab\\tname.txt\" changed on both sides; the guest's version is kept (see `limactl mcp review sshd-test`)\n"
	// The guest copy was checkpointed before the sync changed it.
	wantErr := "The guest copy was checkpointed first: `limactl mcp restore " + sessiontest.Instance + " 1` puts it back as it was.\n"
	if out.String() != want || errOut.String() != wantErr {
		t.Errorf("stdout %q, stderr %q; want stdout %q, stderr %q", out, errOut, want, wantErr)
	}
	if got := f.Guest("cat edited.txt both.txt new.txt $'tab\\tname.txt'; test -e gone.txt || echo gone"); got != "2\nguest\nnew\nguest\ngone\n" {
		t.Errorf("guest copy after sync: %q", got)
	}
}

func removeHost(t *testing.T, f *sessiontest.Fixture, rel string) {
	t.Helper()
	if err := os.Remove(filepath.Join(f.Workdir, rel)); err != nil {
		t.Fatal(err)
	}
}

// On a terminal, sync says what it waits for.
func TestSyncShowsProgressOnATerminal(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	f.WriteHost("a.txt", "edited\n") // something to copy: the guest is reached
	ios, _, _, errOut := iostreams.Test()
	ios.SetTTY(false, true)
	if err := synccmd.Run(context.Background(), &synccmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, Open: f.Opener()}); err != nil {
		t.Fatal(err)
	}
	if want := "Connecting to " + sessiontest.Instance + "… comparing " + f.Workdir + " with its staged copy…\n"; !strings.HasPrefix(errOut.String(), want) {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}

// A sync with no host edit to bring in says so, and changes nothing; it says so without
// reaching the guest: the instance stopped (no connection at all), the answer is the same,
// while a host edit then needs the guest and the sync says why it cannot.
func TestSyncNothing(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	f.Guest("echo agent > a.txt")
	ios, _, out, errOut := iostreams.Test()
	if err := synccmd.Run(context.Background(), &synccmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, Open: f.Opener()}); err != nil {
		t.Fatal(err)
	}
	if want := "Nothing to copy: the host has no edit since the copy was staged (or last synced) that the guest copy lacks.\n"; out.String() != want || errOut.Len() != 0 {
		t.Errorf("stdout %q, stderr %q; want stdout %q", out, errOut, want)
	}
	if got := f.Guest("cat a.txt"); got != "agent\n" {
		t.Errorf("guest copy after sync: %q", got)
	}

	stopped := func(ctx context.Context, name string) (*sessionopen.Target, error) {
		t, err := f.Opener()(ctx, name)
		if err != nil {
			return nil, err
		}
		t.Conn.Close()
		t.Conn, t.ConnErr, t.Instance.Status = nil, errors.New("instance is stopped"), "Stopped"
		return t, nil
	}
	ios, _, out, _ = iostreams.Test()
	if err := synccmd.Run(context.Background(), &synccmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, Open: stopped}); err != nil {
		t.Fatalf("nothing to copy, the instance stopped: %v", err)
	}
	if want := "Nothing to copy: the host has no edit since the copy was staged (or last synced) that the guest copy lacks.\n"; out.String() != want {
		t.Errorf("nothing to copy, the instance stopped: stdout %q", out)
	}
	f.WriteHost("b.txt", "new\n")
	ios, _, _, _ = iostreams.Test()
	if err := synccmd.Run(context.Background(), &synccmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, Open: stopped}); err == nil {
		t.Error("a host edit to copy into a stopped instance: no error")
	}
}
