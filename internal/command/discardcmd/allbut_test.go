package discardcmd_test

import (
	"context"
	"errors"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/discardcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
)

// A bad --all-but is refused with the reason before the instance is opened.
func TestAllButRefusals(t *testing.T) {
	open := func(context.Context, string) (*sessionopen.Target, error) {
		t.Error("the instance was opened")
		return nil, errors.New("not here")
	}
	for _, c := range []struct {
		opts discardcmd.Options
		want string
	}{
		{discardcmd.Options{AllBut: "a b"}, `--all-but: session "a b": a session name is 1 to 32 letters, digits, '-' or '_', starting with a letter or digit ("default": the unnamed session)`},
		{discardcmd.Options{AllBut: "try1", Session: "try2"}, "--all-but NAME and --session NAME cannot be used together: --all-but names the session to keep"},
	} {
		ios, _, _, _ := iostreams.Test()
		c.opts.IO, c.opts.Instance, c.opts.Workdir, c.opts.Open = ios, "vm", t.TempDir(), open
		if err := discardcmd.Run(context.Background(), &c.opts); err == nil || err.Error() != c.want {
			t.Errorf("--all-but %q --session %q: %v; want %q", c.opts.AllBut, c.opts.Session, err, c.want)
		}
	}
}
