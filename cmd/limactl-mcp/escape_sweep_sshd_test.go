package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/command/restorecmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/reviewcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/command/statuscmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe/termsafetest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// The escape-class sweep: guest text of every kind of terminal control (termsafetest.Classes)
// sent through each path that carries guest text to a person's terminal — the top-level error
// printer, a restore whose runner error names a forged checkpoint entry, review and status
// with hostile file names and checkpoint labels, review --patch and --since — and the bytes
// the command wrote to the terminal (stdout a terminal, and stderr) hold none of them.

// terminal is a command's streams as a person's terminal has them: stdout a terminal, stdin
// not (no TUI), stderr for people.
type terminal struct {
	ios         *iostreams.IOStreams
	out, errOut *bytes.Buffer
}

func newTerminal() *terminal {
	ios, _, out, errOut := iostreams.Test()
	ios.SetTTY(false, true)
	return &terminal{ios: ios, out: out, errOut: errOut}
}

// run runs cmd with args as main does (the top-level printer included) and returns the code.
func (term *terminal) run(cmd *cobra.Command, args ...string) int {
	cmd.SetArgs(args)
	cmd.SetOut(term.ios.Out)
	cmd.SetErr(term.ios.ErrOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return exitStatus(term.ios, cmd.ExecuteContext(context.Background()))
}

func (term *terminal) check(t *testing.T, what string) string {
	t.Helper()
	termsafetest.Check(t, what+" (stdout)", term.out.Bytes())
	termsafetest.Check(t, what+" (stderr)", term.errOut.Bytes())
	return term.out.String() + term.errOut.String()
}

// The top-level printer: an error that quotes the guest, every class at once and one by one.
func TestEscapeSweepTopLevelError(t *testing.T) {
	samples := []string{termsafetest.All()}
	for _, c := range termsafetest.Classes {
		samples = append(samples, c.Sample)
	}
	for _, s := range samples {
		term := newTerminal()
		code := term.run(statuscmd.NewCmd(cmdutil.New(term.ios), func(context.Context, *statuscmd.Options) error {
			return fmt.Errorf("reading the guest: %w", errors.New("the guest runner failed on "+s+"\nlimactl-mcp: forged line"))
		}))
		if code == 0 {
			t.Fatal("exit code 0 for an error")
		}
		got := term.check(t, "the top-level error")
		if !strings.HasPrefix(got, "limactl-mcp: reading the guest: the guest runner failed on ") || !strings.Contains(got, "\n  limactl-mcp: forged line") {
			t.Errorf("the error as printed: %q", got)
		}
	}
}

// hostileName is every class in one file name: no slash, no NUL, at most 255 bytes.
func hostileName(sample string) string {
	n := strings.NewReplacer("/", "_", "\x00", "").Replace(sample)
	return "h-" + n
}

// Restore, when the runner fails on a forged entry of a checkpoint's manifest (the agent can
// write the store): the runner's error names the entry, and the top-level printer printed it
// raw (the window title set, the screen cleared, the clipboard written).
func TestEscapeSweepRestoreForgedManifest(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n", "d/c.txt": "c\n"})
	open := f.Opener()
	term := newTerminal()
	// A checkpoint, taken as the checkpoint tool takes one.
	target, err := open(context.Background(), sessiontest.Instance)
	if err != nil {
		t.Fatal(err)
	}
	s, err := target.Session(f.Workdir, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Checkpoint(context.Background(), "start", false); err != nil {
		t.Fatal(err)
	}
	target.Close()
	// The agent appends an entry whose name is every escape class, with content nowhere.
	forged := "zz-" + strings.NewReplacer("/", "_", "\x00", "").Replace(termsafetest.All())
	line := "f 644 4 0 0 0 " + strings.Repeat("ab", 32) + " " + strconv.QuoteToASCII(forged)
	manifest := path.Join(f.Srv.Home, ".cache/limactl-mcp/checkpoints", staging.SessionID(f.Workdir), "manifests/1")
	f.Srv.Run(t, "sh", "-c", "printf '%s\\n' "+shellquote.Quote(line)+" >> "+manifest)
	f.Guest("echo agent > a.txt")

	code := term.run(restorecmd.NewCmd(cmdutil.New(term.ios), func(ctx context.Context, o *restorecmd.Options) error {
		o.Open = open
		return restorecmd.Run(ctx, o)
	}), sessiontest.Instance, "1", "--workdir", f.Workdir)
	got := term.check(t, "restore with a forged manifest")
	if code == 0 || !strings.Contains(got, "zz-") {
		t.Errorf("restore of a forged checkpoint: exit %d, printed:\n%s", code, got)
	}
	t.Logf("restore printed: %s", got)
}

// Review (summary, --dry-run, --patch, --since) and status with hostile file names, file
// content and a hostile checkpoint label.
func TestEscapeSweepReviewAndStatus(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	open := f.Opener()
	target, err := open(context.Background(), sessiontest.Instance)
	if err != nil {
		t.Fatal(err)
	}
	s, err := target.Session(f.Workdir, "")
	if err != nil {
		t.Fatal(err)
	}
	// Labels of every class (a label has at most 200 bytes: as many checkpoints as it takes).
	var labels []string
	label := ""
	for _, c := range termsafetest.Classes {
		sample := strings.ReplaceAll(c.Sample, "\x00", "")
		if len(label)+len(sample) > 200 {
			labels, label = append(labels, label), ""
		}
		label += sample
	}
	for _, l := range append(labels, label) {
		if _, err := s.Checkpoint(context.Background(), l, false); err != nil {
			t.Fatal(err)
		}
	}
	target.Close()
	var script strings.Builder
	for _, c := range termsafetest.Classes {
		fmt.Fprintf(&script, "printf '%%s' %s > %s\n", shellquote.Quote(c.Sample+"\n"), shellquote.Quote(hostileName(c.Sample)))
	}
	script.WriteString("printf '%s\\n' " + shellquote.Quote(strings.ReplaceAll(termsafetest.All(), "\x00", "")) + " > a.txt\n")
	f.Guest(strings.ReplaceAll(script.String(), "\x00", "")) // no NUL in an argument

	review := func(args ...string) func(t *testing.T) {
		return func(t *testing.T) {
			term := newTerminal()
			code := term.run(reviewcmd.NewCmd(cmdutil.New(term.ios), func(ctx context.Context, o *reviewcmd.Options) error {
				o.Open = open
				return reviewcmd.Run(ctx, o)
			}), append([]string{sessiontest.Instance, "--workdir", f.Workdir}, args...)...)
			got := term.check(t, "review "+strings.Join(args, " "))
			if !strings.Contains(got, "h-") {
				t.Errorf("review %v (exit %d) did not name the files:\n%s", args, code, got)
			}
		}
	}
	t.Run("summary", review())
	t.Run("dry-run", review("--dry-run"))
	t.Run("patch", review("--patch"))
	t.Run("since", review("--since", "1"))
	t.Run("since-patch", review("--since", "1", "--patch"))
	t.Run("status", func(t *testing.T) {
		term := newTerminal()
		code := term.run(statuscmd.NewCmd(cmdutil.New(term.ios), func(ctx context.Context, o *statuscmd.Options) error {
			o.Open = open
			return statuscmd.Run(ctx, o)
		}), sessiontest.Instance)
		got := term.check(t, "status")
		if code != 0 || !strings.Contains(got, fmt.Sprintf("checkpoints: %d checkpoints", len(labels)+1)) {
			t.Errorf("status (exit %d):\n%s", code, got)
		}
	})
}
