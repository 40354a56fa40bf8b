package cmdutil_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// Resolve makes the working directory absolute and symlink-free and checks the session name,
// before anything is opened; ResolveInstance does not look at the working directory.
func TestResolve(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if r, err := filepath.EvalSymlinks(real); err == nil {
		real = r
	}
	opened := false
	open := func(context.Context, string) (*sessionopen.Target, error) {
		opened = true
		return nil, errors.New("not here")
	}
	r, err := cmdutil.Resolve(cmdutil.Selector{IO: ios, Verb: "sync", Instance: "vm", Workdir: link, Session: "default", Open: open})
	if err != nil || r.Workdir != real || r.Session != "" || r.Instance != "vm" || r.Verb != "sync" || r.Flag() != "" {
		t.Errorf("Resolve = %+v, %v; want workdir %s, the unnamed session", r, err, real)
	}
	r, err = cmdutil.Resolve(cmdutil.Selector{IO: ios, Verb: "sync", Instance: "vm", Workdir: real, Session: "b", Open: open})
	if err != nil || r.Session != "b" || r.Flag() != staging.SessionFlag("b") {
		t.Errorf("Resolve --session b = %+v, %v", r, err)
	}
	if _, err := cmdutil.Resolve(cmdutil.Selector{IO: ios, Verb: "sync", Instance: "vm", Workdir: real, Session: "no/such", Open: open}); err == nil || !strings.Contains(err.Error(), `--session "no/such"`) {
		t.Errorf("a bad session name: %v", err)
	}
	r, err = cmdutil.ResolveInstance(cmdutil.Selector{IO: ios, Verb: "status", Instance: "vm", Session: "default", Open: open})
	if err != nil || r.Workdir != "" || r.Session != "" {
		t.Errorf("ResolveInstance = %+v, %v", r, err)
	}
	if opened {
		t.Error("the instance was opened while resolving")
	}
}

// OpenInstance names, for a misspelled instance, the command meant on the one it is close to.
func TestOpenInstanceSaysTheCommand(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	typo := &instance.NotExistError{Name: "agnet", Near: "agent"}
	r, err := cmdutil.ResolveInstance(cmdutil.Selector{IO: ios, Verb: "status", Instance: "agnet", Open: func(_ context.Context, name string) (*sessionopen.Target, error) {
		if name != "agnet" {
			t.Errorf("opened %q", name)
		}
		return nil, typo
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.OpenInstance(context.Background()); err == nil || !errors.Is(err, instance.ErrNotExist) || !strings.HasSuffix(err.Error(), "`limactl mcp status agent`") {
		t.Errorf("OpenInstance: %v", err)
	}
}
