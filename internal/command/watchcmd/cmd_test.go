package watchcmd

import (
	"context"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
)

func TestCommandLine(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	var got *Options
	cmd := NewCmd(cmdutil.New(ios), func(_ context.Context, o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"agent", "--session", "s1", "--json", "--workdir", "/w"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Instance != "agent" || got.Session != "s1" || !got.JSON || got.Workdir != "/w" {
		t.Errorf("parsed %+v", got)
	}
	for _, args := range [][]string{{}, {"agent", "extra"}} {
		cmd := NewCmd(cmdutil.New(ios), func(context.Context, *Options) error { t.Fatal("ran"); return nil })
		cmd.SetArgs(args)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "accepts 1 arg") {
			t.Errorf("%v: %v", args, err)
		}
	}
}
