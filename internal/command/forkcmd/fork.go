// Package forkcmd is what `limactl mcp fork` does: it makes new named sessions of a working
// directory, each an exact copy of one of its sessions (now, or at one of its checkpoints),
// with the same baseline, so that several agents can try the same task from the same state.
//
// There is no MCP tool for it: the person decides how many tries there are and runs their
// agents; an agent that could fork could fill the guest's disk with copies and leave sessions
// for the person to review, and gains nothing it needs for its task (it never reviews or
// applies, and a fork's agent is another agent, started by the person).
package forkcmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// Options are the parsed command line of fork and what it depends on.
type Options struct {
	IO       *iostreams.IOStreams
	Instance string
	// From is --session: FROM[@CHECKPOINT].
	From string
	// Names are the new sessions' names.
	Names []string
	// Workdir is --workdir ("": the current directory).
	Workdir string

	// Open opens the instance (default: sessionopen.HostOpener(IO.ErrOut)).
	Open sessionopen.Opener
}

// lockWait bounds the wait for a sync, a restore or a review apply of the origin.
const lockWait = time.Minute

// maxForks bounds how many sessions one fork makes (each is a copy of the tree in the guest).
const maxForks = 16

// ParseFrom splits --session FROM[@CHECKPOINT] into the origin's name ("" for the unnamed
// session) and the checkpoint's id ("": the copy as it is now).
func ParseFrom(flag string) (from, checkpoint string, err error) {
	name, ckpt, at := strings.Cut(flag, "@")
	if at {
		if ckpt == "" || strings.Trim(ckpt, "0123456789") != "" || len(ckpt) > 12 {
			return "", "", fmt.Errorf("--session %q: the checkpoint after '@' is a checkpoint id, a number (`limactl mcp status` lists them)", flag)
		}
	}
	from, err = staging.ParseSessionName(name)
	if err != nil {
		return "", "", err
	}
	return from, ckpt, nil
}

// checkNames checks the new sessions' names before anything is opened.
func checkNames(from string, names []string) error {
	if len(names) > maxForks {
		return fmt.Errorf("%d new sessions: one fork makes at most %d (each is a full copy in the guest)", len(names), maxForks)
	}
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || n == staging.DefaultSessionName {
			return fmt.Errorf("new session %q: a fork is a named session; the unnamed session (%q) is the one `limactl mcp serve` makes without --session", n, staging.DefaultSessionName)
		}
		if _, err := staging.ParseSessionName(n); err != nil {
			return fmt.Errorf("new session %q: a session name is 1 to 32 letters, digits, '-' or '_', starting with a letter or digit", n)
		}
		if n == from {
			return fmt.Errorf("new session %q is the session forked from: name another", n)
		}
		if seen[n] {
			return fmt.Errorf("new session %q is named twice", n)
		}
		seen[n] = true
	}
	return nil
}

// Run forks the session.
func Run(ctx context.Context, opts *Options) error {
	ios := opts.IO
	from, checkpoint, err := ParseFrom(opts.From)
	if err != nil {
		return err
	}
	if err := checkNames(from, opts.Names); err != nil {
		return err
	}
	ref, err := cmdutil.Resolve(cmdutil.Selector{IO: ios, Verb: "fork", Instance: opts.Instance, Workdir: opts.Workdir, Session: from, Open: opts.Open})
	if err != nil {
		return err
	}
	t, s, err := ref.OpenSession(ctx)
	if err != nil {
		return err
	}
	defer t.Close()
	if ref.Inside(s) {
		fmt.Fprintf(ios.ErrOut, "Forking %s.\n", ref.Which(s))
	}
	// A sync, a restore or an apply of the origin would change what is copied: one at a time.
	unlock, err := s.Store().Lock(s.State.ID, lockWait)
	if err != nil {
		return err
	}
	defer unlock()
	// Under a network policy, the origin is read through a runner started as its agent alone
	// (its checkpoints listed, an unknown one named): a fork writes nothing to it, so its
	// agent is not set up.
	read, done := t.ReadingSession(ctx, s)
	defer done()
	origin := staging.SessionLabel(from)
	if checkpoint != "" {
		origin += " at checkpoint " + checkpoint
	}
	var made []string
	for _, name := range opts.Names {
		res, err := read.Fork(ctx, name, checkpoint, staging.ForkConns{Lima: t.Conn, Agent: t.AgentConn})
		if err != nil {
			if len(made) > 0 {
				err = fmt.Errorf("%w (forked before it: %s)", err, strings.Join(made, ", "))
			}
			if errors.Is(err, staging.ErrUnknownCheckpoint) {
				err = fmt.Errorf("%w (`limactl mcp status %s%s` lists them)", err, t.Instance.Name, ref.Flag())
			}
			return err
		}
		made = append(made, name)
		fmt.Fprintf(ios.Out, "Forked session %s from %s in %.1f s: %s\n", name, termsafe.String(origin), res.Duration.Seconds(), termsafe.String(res.Session.State.GuestPath))
		switch {
		case res.SharedError != "":
			fmt.Fprintf(ios.ErrOut, "warning: session %s shares no checkpoint content with %s (its first checkpoint stores its own): %s\n", name, staging.SessionLabel(from), termsafe.String(res.SharedError))
		case res.SharedObjects > 0:
			fmt.Fprintf(ios.Out, "  shares %s of %s's checkpoint store (stored once for both)\n", words.Count(res.SharedObjects, "object"), staging.SessionLabel(from))
		}
		if res.Seeded > 0 {
			fmt.Fprintf(ios.Out, "  knows the content of %s copied unchanged (its first checkpoint does not read them again)\n", words.Count(res.Seeded, "file"))
		}
	}
	inst := t.Instance.Name
	fmt.Fprintf(ios.Out, "Each starts from the same state and the same baseline. Run an agent in each (`limactl mcp configure AGENT --instance %s --session NAME`, or `limactl mcp shell %s --session NAME -- ...`), then:\n", inst, inst)
	all := strings.Join(made, " ")
	fmt.Fprintf(ios.Out, "  limactl mcp compare %s %s       # how their changes differ\n", inst, all)
	fmt.Fprintf(ios.Out, "  limactl mcp review %s --session NAME   # review and apply the one you keep\n", inst)
	fmt.Fprintf(ios.Out, "  limactl mcp review %s --compare %s   # or take a version per file or hunk\n", inst, strings.Join(made, ","))
	fmt.Fprintf(ios.Out, "  limactl mcp discard %s --all-but NAME  # remove the other sessions of this directory\n", inst)
	return nil
}
