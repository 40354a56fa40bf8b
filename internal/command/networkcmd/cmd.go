// Package networkcmd is `limactl mcp network`: the agent's network policy. `network INSTANCE
// show|allow|deny|set` changes a running session's policy at once (live.go); `presets` prints
// the presets an allow policy may name (allow:@go,example.com).
package networkcmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
)

// NewCmd is `network`: `network INSTANCE show|allow|deny|set` shows or changes a session's
// policy at once (RunLive; liveF instead when a test gives one), `network presets` lists the
// presets.
func NewCmd(f *cmdutil.Factory, liveF func(context.Context, *LiveOptions) error) *cobra.Command {
	opts := &LiveOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "network INSTANCE show|allow HOST...|deny HOST...|set POLICY|once ID|refuse ID",
		Short: "Show or change a session's network policy at once (no restart); list the presets",
		Long: `Show or change the network policy of the working directory's session in INSTANCE while
its agent runs (docs/network.md). The change is recorded with the session on the host and put in
place in the guest at once: the agent's next connection is decided by it, without restarting the
agent or its MCP server.

  limactl mcp network agent show                    the policy, its hosts, what the agent reached
  limactl mcp network agent allow example.com:443   add hosts (HOST, HOST:PORT, *.DOMAIN, IP, @PRESET)
  limactl mcp network agent deny example.com:443    take entries away (the last one: none)
  limactl mcp network agent set allow:@go,@npm      replace the policy
  limactl mcp network agent set none --save         ... and keep it as the project's policy on the host
  limactl mcp network agent once 3f9a0c...          let one held connection through (its id, from watch --json)
  limactl mcp network agent refuse 3f9a0c...        refuse a held connection now
  limactl mcp network presets                       the presets an allow policy may name

While a watch runs (limactl mcp watch, or its --json stream read by a script), the guest's
proxy holds a connection the policy refuses, and the session's relay an HTTPS request that
method and path rules refuse, up to 60 s, for a decision: once and refuse make it for one held
connection or request, by the id watch --json prints, and change no policy.

Between two policies (none, allow:...) a change is live. Between open and a policy it is not:
the agent works as another guest user then, which only a restart of its server does (serve
--network=..., or configure --network=... for the agent's configuration).`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: cmdutil.CompleteInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return fmt.Errorf("name the instance and what to do: limactl mcp network INSTANCE show|allow HOST...|deny HOST...|set POLICY|once ID|refuse ID (or limactl mcp network presets)")
			}
			opts.Instance, opts.Action, opts.Args = args[0], args[1], args[2:]
			if liveF != nil {
				return liveF(cmd.Context(), opts)
			}
			return RunLive(cmd.Context(), opts)
		},
	}
	cmdutil.AddWorkdirFlag(cmd, &opts.Workdir)
	cmdutil.AddSessionFlag(cmd, &opts.Session, cmdutil.SessionUsage)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "Print JSON")
	cmd.Flags().BoolVar(&opts.Save, "save", false, "Also keep the resulting policy as the project's policy on the host (outside the project, in the user's configuration directory), which serve and shell use when no --network is given; set --save works before the project has a session")
	cmd.AddCommand(NewPresetsCmd(f, nil))
	return cmd
}

// NewPresetsCmd is `network presets`: the cobra command, which binds the command line into
// PresetsOptions and calls RunPresets (runF instead, when a test gives one).
func NewPresetsCmd(f *cmdutil.Factory, runF func(context.Context, *PresetsOptions) error) *cobra.Command {
	opts := &PresetsOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "presets",
		Short: "List the network presets (allow:@NAME) and the hosts each allows",
		Long: `List the presets an allow policy may name with @, and the hosts each stands for:
--network=allow:@go,@npm,example.com allows the hosts of @go and @npm, and example.com.

A preset allows its hosts as any host of a policy does: every request, on every port,
including those that write (a publish to a registry, a push with a token the agent holds).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return RunPresets(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "Print the presets as JSON")
	return cmd
}
