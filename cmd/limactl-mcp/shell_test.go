package main

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/command/shellcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
)

// shell: flags before INSTANCE are ours; everything after INSTANCE (or after --) is the
// command, its own flags included, as with `limactl shell`.
func TestShellFlags(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	for _, tc := range []struct {
		args []string
		want shellcmd.Options
	}{
		{nil, shellcmd.Options{IO: ios, Instance: "default"}},
		{[]string{"agent"}, shellcmd.Options{IO: ios, Instance: "agent"}},
		{[]string{"agent", "--", "claude", "implement the parser"}, shellcmd.Options{IO: ios, Instance: "agent", Command: []string{"claude", "implement the parser"}}},
		{[]string{"agent", "ls", "-la", "--yes"}, shellcmd.Options{IO: ios, Instance: "agent", Command: []string{"ls", "-la", "--yes"}}},
		{[]string{"--", "make", "test"}, shellcmd.Options{IO: ios, Instance: "default", Command: []string{"make", "test"}}},
		{[]string{"--yes", "--env", "A", "--env", "B=c", "--agent-env", "--sync", "--shell", "/bin/bash", "--workdir", "/w", "--exclude", "node_modules", "--include-ignored", "--accessible", "agent", "--", "make", "--", "x"},
			shellcmd.Options{IO: ios, Instance: "agent", Yes: true, Env: []string{"A", "B=c"}, AgentEnv: true, Sync: true, Shell: "/bin/bash", Workdir: "/w",
				Excludes: []string{"node_modules"}, IncludeIgnored: true, Accessible: true, Command: []string{"make", "--", "x"}}},
		{[]string{"--no-review", "agent", "true"}, shellcmd.Options{IO: ios, Instance: "agent", NoReview: true, Command: []string{"true"}}},
	} {
		var got *shellcmd.Options
		if err := execute(t, shellcmd.NewCmd(cmdutil.New(ios), capture(&got)), tc.args...); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("%q: options %+v, want %+v", tc.args, *got, tc.want)
		}
	}
	if err := execute(t, shellcmd.NewCmd(cmdutil.New(ios), func(context.Context, *shellcmd.Options) error { return nil }), "--yes", "--no-review", "agent"); err == nil {
		t.Error("--yes with --no-review was accepted")
	}
	// One of our flags after INSTANCE is not run as the guest command (where bash said
	// "--: invalid option" and the policy was silently not applied): the error says where it goes.
	for _, args := range [][]string{{"agent", "--network=none", "--", "echo", "hi"}, {"agent", "--yes", "make"}, {"agent", "-y", "make"}} {
		err := execute(t, shellcmd.NewCmd(cmdutil.New(ios), func(context.Context, *shellcmd.Options) error { return nil }), args...)
		if err == nil || !strings.Contains(err.Error(), "put limactl-mcp's flags before the instance") {
			t.Errorf("%q: %v", args, err)
		}
	}
	// A guest program's own flags after the command's name stay the command's.
	if err := execute(t, shellcmd.NewCmd(cmdutil.New(ios), func(context.Context, *shellcmd.Options) error { return nil }), "agent", "--", "ls", "--yes"); err != nil {
		t.Errorf("agent -- ls --yes: %v", err)
	}
}
