package servecmd

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"
)

// Two servers on one working directory, the unnamed session and session "a", each with an
// agent writing the same file: each sees its own copy, at the host's path; the named one's
// instructions say which session it is; its copy is relocated in the guest.
func TestServeNamedSession(t *testing.T) {
	f := newServeFixture(t)
	ctx := ctxFor(t, 2*time.Minute)
	id := staging.SessionIDOf(f.workdir, "a")
	gpath, _ := staging.SessionGuestPath(f.workdir, "a", f.srv.Home, id)
	t.Cleanup(func() {
		f.srv.Run(t, "rm", "-rf", gpath, filepath.Join(f.srv.Home, ".cache", "limactl-mcp", "sessions", id))
	})
	file := filepath.Join(f.workdir, "src", "a.go")

	unnamed := startServe(t, &Options{Workdir: f.workdir, Open: f.open(t, false)})
	named := startServe(t, &Options{Workdir: f.workdir, Session: "a", Open: f.open(t, false)})
	cu, err := connectHTTP(ctx, unnamed.url, unnamed.token)
	if err != nil {
		t.Fatal(err)
	}
	cn, err := connectHTTP(ctx, named.url, named.token)
	if err != nil {
		t.Fatal(err)
	}
	if ir := cn.InitializeResult(); ir == nil || !strings.Contains(ir.Instructions, "Session: a (") || !strings.Contains(ir.Instructions, "limactl mcp review --session a") {
		t.Errorf("the named session's instructions: %+v", ir)
	}
	if ir := cu.InitializeResult(); ir == nil || strings.Contains(ir.Instructions, "Session:") {
		t.Errorf("the unnamed session's instructions: %+v", ir)
	}
	toolsuite.MustOK(t, cu, "write_file", map[string]any{"path": file, "content": "package unnamed\n"})
	toolsuite.MustOK(t, cn, "write_file", map[string]any{"path": file, "content": "package named\n"})
	for c, want := range map[string]string{"unnamed": "package unnamed\n", "a": "package named\n"} {
		cs := cu
		if c == "a" {
			cs = cn
		}
		r := toolsuite.MustOK(t, cs, "read_file", map[string]any{"path": file})
		if quoted, _ := json.Marshal(want); !strings.Contains(r.Text, `"content":`+string(quoted)) {
			t.Errorf("session %s reads %q, want %q", c, r.Text, want)
		}
	}
	if got := f.srv.Run(t, "cat", gpath+"/src/a.go"); got != "package named\n" {
		t.Errorf("the named session's copy at %s holds %q", gpath, got)
	}
	_ = cn.Close()
	if err := named.stop(); err != nil {
		t.Fatal(err)
	}
	if logs := named.stderr.String(); !strings.Contains(logs, `msg="working directory staged" workdir=`+f.workdir+" session=a guest_path="+gpath) {
		t.Errorf("the named session's staging is not logged with its name and path:\n%s", logs)
	}
}

// A bad name, and a name on an instance that mounts the directory, stop serve at once.
func TestServeSessionRefused(t *testing.T) {
	f := newServeFixture(t)
	for _, tc := range []struct {
		session string
		mounts  bool
		want    string
	}{
		{"a/b", false, `--session "a/b": a session name is`},
		{"a", true, "--session a needs a staged session"},
	} {
		err := Run(context.Background(), &Options{IO: &iostreams.IOStreams{In: strings.NewReader(""), Out: &syncBuffer{}, ErrOut: &syncBuffer{}}, Instance: "sshd-test", Workdir: f.workdir, Session: tc.session, Open: f.open(t, tc.mounts)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--session %s (mounts %v): %v, want %q", tc.session, tc.mounts, err, tc.want)
		}
	}
}
