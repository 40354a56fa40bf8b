// Package discardcmd is what `limactl mcp discard` does: it removes a staged session, its
// guest copy (with any pending changes) and its state, after asking (or with --yes).
package discardcmd

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/command/exitcode"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
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
	t, s, err := sessionopen.OpenSession(ctx, open, opts.Instance, wd)
	if err != nil {
		return err
	}
	defer t.Close()
	workdir := s.State.Workdir
	what := "the staged copy of " + workdir
	if cs, err := s.GuestChanges(ctx); err == nil && len(cs.Changes) > 0 {
		what += fmt.Sprintf(", with %d pending change(s) that will be lost", len(cs.Changes))
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
