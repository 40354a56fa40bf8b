// Package portscmd is `limactl mcp ports`: the ports the agent's background processes listen
// on in the guest, per session, with the host URLs that reach them (the previews that each
// session's MCP server forwards: internal/preview).
package portscmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/preview"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
)

// Options are the parsed command line of ports and what it depends on.
type Options struct {
	IO       *iostreams.IOStreams
	Instance string
	JSON     bool
	// Session is --session: only the sessions of this name ("": every one; "default": the
	// unnamed ones).
	Session string

	// Open opens the instance (default: sessionopen.HostOpener(IO.ErrOut)).
	Open sessionopen.Opener
}

// NewCmd is `ports`: the cobra command, which binds the command line into Options and calls
// Run (runF instead, when a test gives one).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "ports [INSTANCE]",
		Short: "List the agent's dev servers and the host URLs that reach them",
		Long: `List the TCP ports the agent's background processes listen on in the guest (a dev
server started with run_shell_command's background: true), per session, with the URL that
reaches each from the host. Each session's MCP server (limactl mcp serve) forwards them over
its SSH connection while the process listens: on the same port number when it is free on the
host, else on another (the URL says which). They are gone when the process exits or the
server ends. The dev servers a command of limactl mcp shell starts (an agent running in the
VM) are forwarded the same way while the command runs.`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: cmdutil.CompleteInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Instance = cmdutil.InstanceArg(args)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "Print JSON")
	cmdutil.AddSessionFlag(cmd, &opts.Session, "Show only the sessions called `NAME` (default: every session; \"default\": the unnamed ones)")
	return cmd
}

// JSON is the output of `ports --json`.
type JSON struct {
	SchemaVersion int           `json:"schema_version"`
	Instance      string        `json:"instance"`
	Sessions      []SessionJSON `json:"sessions"`
}

// SessionJSON is one server's forwards.
type SessionJSON struct {
	Workdir string `json:"workdir"`
	// Session is the session's name, left out for the unnamed session.
	Session  string `json:"session,omitempty"`
	ServePID int    `json:"serve_pid"`
	// Shell says the ports are a `limactl mcp shell` command's (ServePID is the shell's pid;
	// each port's id is 0), not a server's background processes'.
	Shell bool           `json:"shell,omitempty"`
	Ports []preview.Port `json:"ports"`
}

// Run lists the ports.
func Run(ctx context.Context, opts *Options) error {
	ref, err := cmdutil.ResolveInstance(cmdutil.Selector{IO: opts.IO, Verb: "ports", Instance: opts.Instance, Session: opts.Session, Open: opts.Open})
	if err != nil {
		return err
	}
	t, err := ref.OpenInstance(ctx)
	if err != nil {
		return err
	}
	defer t.Close()
	recs, err := Records(t.Store)
	if err != nil {
		return err
	}
	out := JSON{SchemaVersion: 1, Instance: t.Instance.Name, Sessions: []SessionJSON{}}
	for _, r := range recs {
		if opts.Session != "" && r.Session != ref.Session {
			continue
		}
		ports := r.Ports
		if ports == nil {
			ports = []preview.Port{}
		}
		out.Sessions = append(out.Sessions, SessionJSON{Workdir: r.Workdir, Session: r.Session, ServePID: r.ServePID, Shell: r.Shell, Ports: ports})
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	printPorts(opts.IO.Out, out)
	return nil
}

// Records are the forwards of the instance's running servers (store: its host state).
func Records(store staging.Store) ([]preview.Record, error) {
	return preview.ReadRecords(filepath.Join(store.Dir, "ports"))
}

func printPorts(w io.Writer, out JSON) {
	n := 0
	for _, s := range out.Sessions {
		n += len(s.Ports)
	}
	if n == 0 {
		fmt.Fprintf(w, "No ports forwarded from instance %q. A dev server the agent starts in the background (run_shell_command with background: true) is listed here, with its host URL, while it listens and its MCP server runs; so is one a command of limactl mcp shell starts, while the command runs.\n", out.Instance)
		return
	}
	for _, s := range out.Sessions {
		if len(s.Ports) == 0 {
			continue
		}
		if s.Session != "" {
			fmt.Fprintf(w, "%s  [session %s]\n", s.Workdir, termsafe.String(s.Session))
		} else {
			fmt.Fprintf(w, "%s\n", s.Workdir)
		}
		for _, p := range s.Ports {
			fmt.Fprintf(w, "  %s\n", Line(p, s.Shell))
		}
	}
}

// Line says one forward in words: "8000 → http://127.0.0.1:8000 (background process 1)";
// shell: it is a process of a `limactl mcp shell` command's.
func Line(p preview.Port, shell bool) string {
	s := fmt.Sprintf("%d → %s  (background process %d", p.GuestPort, p.HostURL, p.ID)
	if shell {
		s = fmt.Sprintf("%d → %s  (started in limactl mcp shell", p.GuestPort, p.HostURL)
	}
	if p.Moved {
		s += fmt.Sprintf("; host port %d was taken", p.GuestPort)
	}
	return s + ")"
}
