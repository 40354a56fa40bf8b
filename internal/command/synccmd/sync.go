// Package synccmd is what `limactl mcp sync` does: it brings host edits made since staging
// into the guest copy, keeping the agent's work.
package synccmd

import (
	"context"
	"fmt"

	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
	"github.com/limactl-mcp/limactl-mcp/internal/workdirpath"
)

// Options are the parsed command line of sync and what it depends on.
type Options struct {
	IO       *iostreams.IOStreams
	Instance string
	// Workdir is --workdir ("": the current directory).
	Workdir string
	// Session is --session: the session's name ("" or "default": the unnamed session).
	Session string

	// Open opens the instance (default: sessionopen.HostOpener(IO.ErrOut)).
	Open sessionopen.Opener
}

// Run syncs the session of the working directory.
func Run(ctx context.Context, opts *Options) error {
	ios := opts.IO
	workdir, err := workdirpath.Resolve(opts.Workdir)
	if err != nil {
		return err
	}
	session, err := staging.ParseSessionName(opts.Session)
	if err != nil {
		return err
	}
	open := opts.Open
	if open == nil {
		open = sessionopen.HostOpener(ios.ErrOut)
	}
	// On a terminal, a wait of seconds (connecting, comparing the trees) shows progress.
	if ios.IsStdoutTTY() {
		fmt.Fprintf(ios.ErrOut, "Connecting to %s… comparing %s with its staged copy…\n", termsafe.String(opts.Instance), termsafe.String(workdir))
	}
	t, s, err := sessionopen.OpenSession(ctx, open, "sync", opts.Instance, workdir, session)
	if err != nil {
		return err
	}
	defer t.Close()
	if s.State.Workdir != workdir {
		fmt.Fprintf(ios.ErrOut, "Syncing %s.\n", sessionopen.Which(s, workdir))
	}
	rep, err := s.Sync(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(ios.Out, "Copied %s into the guest and removed %s the host deleted.\n", words.Count(len(rep.Pushed), "host change"), words.Count(len(rep.Removed), "path"))
	if rep.Checkpoint != "" {
		fmt.Fprintf(ios.ErrOut, "The guest copy was checkpointed first: `limactl mcp restore %s %s%s` puts it back as it was.\n", opts.Instance, rep.Checkpoint, staging.SessionFlag(session))
	}
	if rep.CheckpointError != "" {
		fmt.Fprintf(ios.ErrOut, "warning: no checkpoint of the guest copy was taken before the sync: %s\n", termsafe.String(rep.CheckpointError))
	}
	for _, p := range rep.Conflicts {
		fmt.Fprintf(ios.Out, "conflict: %s changed on both sides; the guest's version is kept (see `limactl mcp review %s%s`)\n", termsafe.Path(string(p)), t.Instance.Name, staging.SessionFlag(session))
	}
	return nil
}
