// Package sessiontest stages a working directory into a real sshd on loopback (see
// internal/testutil/sshd), which stands in for a Lima guest, and opens it the way the
// commands do (a sessionopen.Opener), for tests of the commands' Run functions.
package sessiontest

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

// Instance is the instance name the Targets of a Fixture carry.
const Instance = "sshd-test"

// Fixture is a working directory on the host with a staged session in the sshd's "guest".
type Fixture struct {
	T         *testing.T
	Srv       *sshd.Server
	Workdir   string // on the host: absolute, symlink-free
	GuestPath string // the staged copy
	Store     staging.Store
}

// New writes files (slash path → content) into a new working directory and stages it.
func New(t *testing.T, files map[string]string) *Fixture {
	t.Helper()
	srv := sshd.Start(t)
	tmp := t.TempDir()
	if real, err := filepath.EvalSymlinks(tmp); err == nil {
		tmp = real
	}
	f := &Fixture{
		T:         t,
		Srv:       srv,
		Workdir:   filepath.Join(tmp, "proj"),
		GuestPath: fmt.Sprintf("%s/cmdtest-%d/proj", srv.Home, time.Now().UnixNano()),
		Store:     staging.Store{Dir: filepath.Join(tmp, "state")},
	}
	if err := os.MkdirAll(f.Workdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for rel, data := range files {
		f.WriteHost(rel, data)
	}
	id := staging.SessionID(f.Workdir)
	t.Cleanup(func() {
		srv.Run(t, "rm", "-rf", path.Dir(f.GuestPath), path.Join(srv.Home, ".cache", "limactl-mcp", "sessions", id),
			path.Join(srv.Home, ".cache", "limactl-mcp", "checkpoints", id))
	})
	conn := guesttest.Connect(t, srv, guest.Options{NoLoginShell: true})
	if _, _, err := staging.Open(context.Background(), conn, f.Store, staging.OpenOptions{Instance: Instance, Workdir: f.Workdir, GuestPath: f.GuestPath}); err != nil {
		t.Fatalf("staging: %v", err)
	}
	return f
}

// AddSession stages the session called name of the fixture's working directory where a
// command would put it (a named session is relocated in the guest user's home) and returns
// its guest path; removed from the guest when the test ends.
func (f *Fixture) AddSession(name string) string {
	f.T.Helper()
	id := staging.SessionIDOf(f.Workdir, name)
	conn := guesttest.Connect(f.T, f.Srv, guest.Options{NoLoginShell: true})
	s, _, err := staging.Open(context.Background(), conn, f.Store, staging.OpenOptions{Instance: Instance, Workdir: f.Workdir, Session: name})
	if err != nil {
		f.T.Fatalf("staging session %s: %v", name, err)
	}
	f.T.Cleanup(func() {
		f.Srv.Run(f.T, "rm", "-rf", s.State.GuestPath, path.Join(f.Srv.Home, ".cache", "limactl-mcp", "sessions", id))
	})
	return s.State.GuestPath
}

// GuestAt runs a shell script in the guest directory dir (a session's copy) and returns its
// output.
func (f *Fixture) GuestAt(dir, script string) string {
	f.T.Helper()
	return f.Srv.Run(f.T, "bash", "-c", "cd "+dir+" && "+script)
}

// Opener opens the fixture's instance as sessionopen.HostOpener does a Lima instance: every
// call connects anew (the command closes its Target).
func (f *Fixture) Opener() sessionopen.Opener {
	return func(_ context.Context, name string) (*sessionopen.Target, error) {
		if name != Instance {
			return nil, fmt.Errorf("%w %q (the test's instance is %q)", instance.ErrNotExist, name, Instance)
		}
		return &sessionopen.Target{
			Instance: &instance.Instance{Name: Instance, Status: "Running"},
			Store:    f.Store,
			Conn:     guesttest.Connect(f.T, f.Srv, guest.Options{NoLoginShell: true}),
		}, nil
	}
}

// Guest runs a shell script in the guest copy and returns its output.
func (f *Fixture) Guest(script string) string {
	f.T.Helper()
	return f.Srv.Run(f.T, "bash", "-c", "cd "+f.GuestPath+" && "+script)
}

// WriteHost writes a file of the working directory on the host.
func (f *Fixture) WriteHost(rel, data string) {
	f.T.Helper()
	p := filepath.Join(f.Workdir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.T.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		f.T.Fatal(err)
	}
}

// ReadHost reads a file of the working directory on the host ("<missing>" when it is not
// there).
func (f *Fixture) ReadHost(rel string) string {
	f.T.Helper()
	data, err := os.ReadFile(filepath.Join(f.Workdir, filepath.FromSlash(rel)))
	if os.IsNotExist(err) {
		return "<missing>"
	}
	if err != nil {
		f.T.Fatal(err)
	}
	return string(data)
}
