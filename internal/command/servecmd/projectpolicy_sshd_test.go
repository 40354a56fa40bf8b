package servecmd

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/projectpolicy"
)

// Without --network, serve starts the session under the project's policy file on the host and
// says so; --network wins over it; a damaged file stops serve with its path.
func TestServeReadsTheProjectPolicy(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	f := newServeFixture(t)
	path, err := projectpolicy.Save(f.workdir, "allow:example.com:ro")
	if err != nil {
		t.Fatal(err)
	}
	serve := func(network string) (string, error) {
		errOut := &syncBuffer{}
		err := Run(context.Background(), &Options{IO: &iostreams.IOStreams{In: strings.NewReader(""), Out: &syncBuffer{}, ErrOut: errOut}, Instance: "sshd-test", Workdir: f.workdir, Network: network, Open: f.open(t, false)})
		return errOut.String(), err
	}
	logs, err := serve("")
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, logs)
	}
	if !strings.Contains(logs, "network policy allow:example.com:ro from the project's policy file on the host (no --network given)") || !strings.Contains(logs, "file="+path) ||
		!strings.Contains(logs, "under network policy allow:example.com:ro") {
		t.Errorf("serve without --network:\n%s", logs)
	}
	logs, err = serve("open")
	if err != nil {
		t.Fatalf("serve --network=open: %v\n%s", err, logs)
	}
	if strings.Contains(logs, "project's policy file") || strings.Contains(logs, "under network policy") {
		t.Errorf("serve --network=open used the project's file:\n%s", logs)
	}
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if logs, err := serve(""); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "pass --network") {
		t.Errorf("serve with a damaged file: %v\n%s", err, logs)
	}
}
