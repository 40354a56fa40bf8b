package main

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/command/configurecmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/discardcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/exitcode"
	"github.com/limactl-mcp/limactl-mcp/internal/command/restorecmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/reviewcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/servecmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/statuscmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/synccmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
)

// execute runs cmd with args, as the root command does (errors returned, not printed).
func execute(t *testing.T, cmd *cobra.Command, args ...string) error {
	t.Helper()
	_, _, out, errOut := iostreams.Test()
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return cmd.ExecuteContext(context.Background())
}

// capture is a runF that keeps the options it was called with.
func capture[O any](got **O) func(context.Context, *O) error {
	return func(_ context.Context, o *O) error {
		*got = o
		return nil
	}
}

// The commands hand their flags and arguments to their Run functions; these tests run no
// command logic.

func TestReviewFlags(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	for _, tc := range []struct {
		args []string
		want reviewcmd.Options
	}{
		{nil, reviewcmd.Options{IO: ios, Instance: "default"}},
		{[]string{"agent"}, reviewcmd.Options{IO: ios, Instance: "agent"}},
		{[]string{"agent", "src/", "/abs/x", "-y", "--workdir", "/w"}, reviewcmd.Options{IO: ios, Instance: "agent", Paths: []string{"src/", "/abs/x"}, Yes: true, Workdir: "/w"}},
		{[]string{"--dry-run", "--patch", "--json", "--accessible", "--undo"}, reviewcmd.Options{IO: ios, Instance: "default", DryRun: true, Patch: true, JSON: true, Accessible: true, Undo: true}},
	} {
		var got *reviewcmd.Options
		if err := execute(t, reviewcmd.NewCmd(cmdutil.New(ios), capture(&got)), tc.args...); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("%q: options %+v, want %+v", tc.args, *got, tc.want)
		}
	}
}

func TestServeFlags(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	var got *servecmd.Options
	args := []string{"agent", "--workdir", "/w", "--exclude", "*.log", "--exclude", "tmp/", "--include-ignored", "--fresh", "--no-runner", "--debug", "--create",
		"--http", "127.0.0.1:0", "--http-token-file", "/t"}
	if err := execute(t, servecmd.NewCmd(cmdutil.New(ios), capture(&got)), args...); err != nil {
		t.Fatal(err)
	}
	want := servecmd.Options{IO: ios, Instance: "agent", Workdir: "/w", Excludes: []string{"*.log", "tmp/"}, IncludeIgnored: true, Fresh: true, NoRunner: true, Debug: true, Create: true,
		Template: "template:default", HTTP: servecmd.HTTPOptions{Addr: "127.0.0.1:0", TokenFile: "/t"}}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("options %+v, want %+v", *got, want)
	}

	// A bad --http stops the command before its Run.
	got = nil
	if err := execute(t, servecmd.NewCmd(cmdutil.New(ios), capture(&got)), "--http", "0.0.0.0:1"); err == nil || got != nil {
		t.Errorf("error %v; Run called: %v", err, got != nil)
	}
	if err := execute(t, servecmd.NewCmd(cmdutil.New(ios), capture(&got)), "a", "b"); err == nil || !strings.Contains(err.Error(), "accepts at most 1 arg(s)") {
		t.Errorf("two instances: %v", err)
	}
}

func TestSessionCommandFlags(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	var st *statuscmd.Options
	if err := execute(t, statuscmd.NewCmd(cmdutil.New(ios), capture(&st)), "--json"); err != nil {
		t.Fatal(err)
	}
	if want := (statuscmd.Options{IO: ios, Instance: "default", JSON: true}); !reflect.DeepEqual(*st, want) {
		t.Errorf("status: %+v", *st)
	}
	var sy *synccmd.Options
	if err := execute(t, synccmd.NewCmd(cmdutil.New(ios), capture(&sy)), "agent", "--workdir", "w"); err != nil {
		t.Fatal(err)
	}
	if want := (synccmd.Options{IO: ios, Instance: "agent", Workdir: "w"}); !reflect.DeepEqual(*sy, want) {
		t.Errorf("sync: %+v", *sy)
	}
	var d *discardcmd.Options
	if err := execute(t, discardcmd.NewCmd(cmdutil.New(ios), capture(&d)), "agent", "-y"); err != nil {
		t.Fatal(err)
	}
	if want := (discardcmd.Options{IO: ios, Instance: "agent", Yes: true}); !reflect.DeepEqual(*d, want) {
		t.Errorf("discard: %+v", *d)
	}
	var rs *restorecmd.Options
	if err := execute(t, restorecmd.NewCmd(cmdutil.New(ios), capture(&rs)), "agent", "3", "--workdir", "w", "--dry-run"); err != nil {
		t.Fatal(err)
	}
	if want := (restorecmd.Options{IO: ios, Instance: "agent", Checkpoint: "3", Workdir: "w", DryRun: true}); !reflect.DeepEqual(*rs, want) {
		t.Errorf("restore: %+v", *rs)
	}
	if err := execute(t, restorecmd.NewCmd(cmdutil.New(ios), capture(&rs)), "3"); err != nil || rs.Instance != "default" || rs.Checkpoint != "3" {
		t.Errorf("restore CHECKPOINT: %v %+v", err, rs)
	}
	if err := execute(t, restorecmd.NewCmd(cmdutil.New(ios), nil)); err == nil {
		t.Error("restore without a checkpoint was accepted")
	}
	if err := execute(t, reviewcmd.NewCmd(cmdutil.New(ios), nil), "--since", "3", "--yes"); err == nil {
		t.Error("review --since --yes was accepted")
	}
	for _, cmd := range []*cobra.Command{statuscmd.NewCmd(cmdutil.New(ios), nil), synccmd.NewCmd(cmdutil.New(ios), nil), discardcmd.NewCmd(cmdutil.New(ios), nil)} {
		if err := execute(t, cmd, "a", "b"); err == nil {
			t.Errorf("%s accepts two instances", cmd.Name())
		}
	}
}

func TestConfigureFlags(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	var got *configurecmd.Options
	if err := execute(t, configurecmd.NewCmd(cmdutil.New(ios), capture(&got)), "codex", "--user", "--dry-run", "--name", "vm"); err != nil {
		t.Fatal(err)
	}
	want := configurecmd.Options{IO: ios, Agent: "codex", Instance: "default", User: true, DryRun: true, Name: "vm", Template: "template:default"}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("options %+v, want %+v", *got, want)
	}
}

// A Run function's error becomes the exit code, and the message on stderr unless the command
// has already explained itself.
func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		err    error
		code   int
		stderr string
	}{
		{nil, 0, ""},
		{errors.New("boom"), 1, "limactl-mcp: boom\n"},
		{exitcode.With(exitcode.Pending, errors.New("needs --yes")), 2, "limactl-mcp: needs --yes\n"},
		{exitcode.With(exitcode.Pending, exitcode.ErrSilent), 2, ""},
		{exitcode.With(exitcode.Error, exitcode.ErrSilent), 1, ""},
		{exitcode.ErrSilent, 1, ""},
	} {
		ios, _, out, errOut := iostreams.Test()
		if code := exitStatus(ios, tc.err); code != tc.code || errOut.String() != tc.stderr || out.Len() != 0 {
			t.Errorf("%v: exit code %d, stderr %q, stdout %q; want %d, %q", tc.err, code, errOut, out, tc.code, tc.stderr)
		}
	}
	// Through run, as main calls it.
	ios, _, out, errOut := iostreams.Test()
	if code := run([]string{"review", "--no-such-flag"}, ios); code != 1 || errOut.String() != "limactl-mcp: unknown flag: --no-such-flag\n" || out.Len() != 0 {
		t.Errorf("exit code %d, stdout %q, stderr %q", code, out, errOut)
	}
}
