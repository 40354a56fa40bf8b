package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
)

// target is an instance, its session store, and (when it runs) a connection to it.
type target struct {
	inst    *instance.Instance
	store   staging.Store
	conn    *guest.Conn // nil when the instance is not running
	connErr error
}

func openTarget(ctx context.Context, ios *iostreams.IOStreams, name string) (*target, error) {
	limactl, err := instance.Limactl()
	if err != nil {
		return nil, err
	}
	inst, err := instance.Inspect(ctx, limactl, name)
	if err != nil {
		return nil, err
	}
	t := &target{inst: inst, store: staging.StoreFor(inst.Dir)}
	if t.connErr = inst.CheckRunning(); t.connErr == nil {
		log := slog.New(slog.NewTextHandler(ios.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
		t.conn = guest.New(instance.Resolver(limactl, name), guest.Options{Logger: log, NoLoginShell: true})
	}
	return t, nil
}

func (t *target) close() {
	if t.conn != nil {
		t.conn.Close()
	}
}

// session loads the session of workdir and checks that its guest copy is there.
func (t *target) session(ctx context.Context, workdir string) (*staging.Session, error) {
	st, base, err := t.store.Load(workdir)
	if errors.Is(err, staging.ErrNoSession) {
		return nil, fmt.Errorf("%s has no staged session in instance %q: an agent's `limactl mcp serve %s` run in that directory creates one", workdir, t.inst.Name, t.inst.Name)
	}
	if err != nil {
		return nil, err
	}
	if t.conn == nil {
		return nil, t.connErr
	}
	return staging.Attach(t.conn, t.store, st, base), nil
}

// openSession opens the instance and the staged session of the working directory workdir
// (default: the current directory). The caller closes the target.
func openSession(ctx context.Context, ios *iostreams.IOStreams, name, workdir string) (*target, *staging.Session, error) {
	wd, err := resolveWorkdir(workdir)
	if err != nil {
		return nil, nil, err
	}
	t, err := openTarget(ctx, ios, name)
	if err != nil {
		return nil, nil, err
	}
	s, err := t.session(ctx, wd)
	if err != nil {
		t.close()
		return nil, nil, err
	}
	return t, s, nil
}

func newStatusCmd(ios *iostreams.IOStreams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:               "status [INSTANCE]",
		Short:             "Show the staged sessions of an instance and their pending changes",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, err := openTarget(ctx, ios, instanceArg(args))
			if err != nil {
				return err
			}
			defer t.close()
			sts, err := staging.Statuses(ctx, t.conn, t.store, t.connErr)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(ios.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"instance": t.inst.Name, "sessions": sts})
			}
			printStatus(ios.Out, t.inst.Name, sts)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "Print JSON")
	return cmd
}

func printStatus(w io.Writer, inst string, sts []staging.SessionStatus) {
	if len(sts) == 0 {
		fmt.Fprintf(w, "No staged sessions in instance %q. An agent running `limactl mcp serve %s` in a project directory creates one.\n", inst, inst)
		return
	}
	for _, s := range sts {
		fmt.Fprintf(w, "%s\n", s.Workdir)
		if s.GuestPath != s.Workdir {
			fmt.Fprintf(w, "  guest path: %s\n", s.GuestPath)
		}
		fmt.Fprintf(w, "  staged:     %s (%s ago), %d files, %.1f MB\n", s.StagedAt.Local().Format("2006-01-02 15:04"),
			time.Since(s.StagedAt).Round(time.Minute), s.Files, float64(s.Bytes)/1e6)
		switch {
		case s.Error != "":
			fmt.Fprintf(w, "  pending:    unknown (%s)\n", s.Error)
		case s.PendingTotal == 0:
			fmt.Fprintf(w, "  pending:    nothing\n")
		default:
			var parts []string
			for k, n := range s.Pending {
				parts = append(parts, fmt.Sprintf("%d %s", n, k))
			}
			sort.Strings(parts)
			fmt.Fprintf(w, "  pending:    %d change(s): %s — run `limactl mcp review %s` in %s\n", s.PendingTotal, strings.Join(parts, ", "), inst, s.Workdir)
		}
	}
}

func newSyncCmd(ios *iostreams.IOStreams) *cobra.Command {
	var f sessionFlags
	cmd := &cobra.Command{
		Use:   "sync [INSTANCE]",
		Short: "Bring host edits made since staging into the guest copy, keeping the agent's work",
		Long: `Bring host edits made since staging into the guest copy. A file changed on both sides is a
conflict: the guest's version is kept and it stays pending for review.`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, s, err := openSession(ctx, ios, instanceArg(args), f.Workdir)
			if err != nil {
				return err
			}
			defer t.close()
			rep, err := s.Sync(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(ios.Out, "Copied %d host change(s) into the guest, removed %d.\n", len(rep.Pushed), len(rep.Removed))
			for _, p := range rep.Conflicts {
				fmt.Fprintf(ios.Out, "conflict: %s changed on both sides; the guest's version is kept (see `limactl mcp review`)\n", quoteName(string(p)))
			}
			return nil
		},
	}
	f.register(cmd, false)
	return cmd
}

func newDiscardCmd(ios *iostreams.IOStreams) *cobra.Command {
	var f sessionFlags
	var yes bool
	cmd := &cobra.Command{
		Use:               "discard [INSTANCE]",
		Short:             "Remove a staged session: its guest copy (with any pending changes) and its state",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, s, err := openSession(ctx, ios, instanceArg(args), f.Workdir)
			if err != nil {
				return err
			}
			defer t.close()
			workdir := s.State.Workdir
			what := "the staged copy of " + workdir
			if cs, err := s.GuestChanges(ctx); err == nil && len(cs.Changes) > 0 {
				what += fmt.Sprintf(", with %d pending change(s) that will be lost", len(cs.Changes))
			}
			if !yes {
				if !ios.IsStdinTTY() {
					return &exitCodeError{code: exitPending, err: fmt.Errorf("this would discard %s; pass --yes to confirm without a terminal", what)}
				}
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
		},
	}
	f.register(cmd, false)
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "Do not ask for confirmation")
	return cmd
}

// quoteName shows a path safely on a terminal: control characters and invalid UTF-8 escaped.
func quoteName(s string) string {
	q := fmt.Sprintf("%q", s)
	if q[1:len(q)-1] == s {
		return s
	}
	return q
}
