// Package discardcmd is what `limactl mcp discard` does: it removes a staged session, its
// guest copy (with any pending changes) and its state, after asking (or with --yes).
package discardcmd

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/command/exitcode"
	"github.com/limactl-mcp/limactl-mcp/internal/command/sessionfind"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
	"github.com/limactl-mcp/limactl-mcp/internal/workdirpath"
)

// Options are the parsed command line of discard and what it depends on.
type Options struct {
	IO       *iostreams.IOStreams
	Instance string
	// Workdir is --workdir ("": the current directory).
	Workdir string
	// Yes discards without asking.
	Yes bool

	// Open opens the instance (default: sessionopen.HostOpener(IO.ErrOut)).
	Open sessionopen.Opener
}

// Run discards the session of the working directory.
func Run(ctx context.Context, opts *Options) error {
	ios := opts.IO
	wd, err := workdirpath.Resolve(opts.Workdir)
	if err != nil {
		return err
	}
	if !opts.Yes && !ios.IsStdinTTY() {
		// Said at once, before the instance is opened or the guest is reached: there is
		// nobody to ask, so nothing that follows could be used.
		return exitcode.With(exitcode.Pending, fmt.Errorf("this would discard the staged copy of %s, with every change in it not yet reviewed; pass --yes to confirm without a terminal: `limactl mcp discard %s --yes` (to see the changes first: `limactl mcp review %s --dry-run`)", wd, opts.Instance, opts.Instance))
	}
	open := opts.Open
	if open == nil {
		open = sessionopen.HostOpener(ios.ErrOut)
	}
	t, err := open(ctx, opts.Instance)
	if err != nil {
		return err
	}
	defer t.Close()
	// Run in a subdirectory of a staged project (or in a parent of some), discard names the
	// session(s) and the exact command, and discards nothing: removing a whole project's
	// staged copy is never done on a guess.
	found, err := sessionfind.Workdir(t, "discard", wd)
	if err != nil {
		return err
	}
	if found != wd {
		return fmt.Errorf("%s has no staged session of its own in instance %q: it is inside the staged project %s; to discard that project's staged copy, run `limactl mcp discard %s --workdir %s`", termsafe.String(wd), t.Instance.Name, termsafe.String(found), t.Instance.Name, termsafe.String(shellquote.Quote(found)))
	}
	s, err := t.Session(wd)
	if err != nil {
		return err
	}
	workdir := s.State.Workdir
	what := "the staged copy of " + workdir
	if cs, err := s.GuestChanges(ctx); err == nil && len(cs.Changes) > 0 {
		what += fmt.Sprintf(", with %s that will be lost", words.Count(len(cs.Changes), "pending change"))
	}
	if !opts.Yes {
		fmt.Fprintf(ios.ErrOut, "Discard %s? [y/N] ", what)
		line, _ := bufio.NewReader(ios.In).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			fmt.Fprintln(ios.ErrOut, "Nothing discarded.")
			return nil
		}
	}
	if err := s.Discard(ctx); err != nil {
		return err
	}
	fmt.Fprintf(ios.Out, "Discarded %s.\n", what)
	return nil
}
