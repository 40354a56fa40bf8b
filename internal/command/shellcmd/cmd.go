package shellcmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
)

// NewCmd is `shell`: the cobra command, which binds the command line into Options and calls Run
// (runF instead, when a test gives one: Options and Run are tested without cobra).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "shell [flags] [INSTANCE] [-- COMMAND [ARG...]]",
		Short: "Run a command (or a login shell) in the VM on the staged copy of the working directory, then review",
		Long: `Run COMMAND, or an interactive login shell, inside the Lima instance INSTANCE (default
"default") on the staged copy of the working directory: the same session "limactl mcp serve"
uses, at the same absolute path, staged first if it is not yet. On a terminal it gets a real
PTY (window size and resizes, Ctrl-C goes to the guest program); the exit status is the
command's.

Nothing of the host's environment reaches the guest but TERM: --env NAME passes a variable,
--agent-env the API keys and endpoints of the known agents (the names are printed first).

When the command is done and changed something in the staged copy, the interactive review
opens (as "limactl mcp review"): nothing reaches the host until you accept it. --no-review
leaves the changes pending; without a terminal nothing is written unless --yes is given (every
change that is not a conflict; a file the host changed meanwhile is a conflict, never
overwritten). A resumed copy does not get the host edits made since it was staged or synced
unless --sync is given.`,
		Example: `  limactl mcp shell agent -- claude "implement the parser"   # the agent runs in the VM, then review
  limactl mcp shell agent                                      # an interactive login shell there
  limactl mcp shell --yes agent -- make test                   # scripts: apply every non-conflict
  limactl mcp shell --network allow:@npm --agent-secrets agent -- claude   # the agents' API keys stay on the host
  limactl mcp shell --agent-env agent -- codex                 # the keys' values enter the VM
  limactl mcp shell --env GITHUB_TOKEN --no-review agent -- gemini`,
		ValidArgsFunction: cmdutil.CompleteInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			switch {
			case dash == 0: // limactl mcp shell -- CMD...: the default instance
				opts.Instance, opts.Command = cmdutil.InstanceArg(nil), args
			case len(args) > 0:
				opts.Instance, opts.Command = args[0], args[1:]
			default:
				opts.Instance = cmdutil.InstanceArg(nil)
			}
			if len(opts.Command) > 0 && opts.Command[0] == "--" {
				opts.Command = opts.Command[1:]
			} else if len(opts.Command) > 0 && strings.HasPrefix(opts.Command[0], "-") {
				// One of ours after INSTANCE (`shell agent --network=none -- claude`) would run
				// as the guest command and fail there in the shell's words ("bash: --: invalid
				// option"), the flag silently not applied: said here instead.
				name, _, _ := strings.Cut(strings.TrimLeft(opts.Command[0], "-"), "=")
				f := cmd.Flags().Lookup(name)
				if !strings.HasPrefix(opts.Command[0], "--") && name != "" {
					f = cmd.Flags().ShorthandLookup(name[:1])
				}
				if f != nil && name != "" {
					return fmt.Errorf("%s comes after the instance %q, where everything is the command to run in the guest: put limactl-mcp's flags before the instance (limactl mcp shell --%s ... %s -- COMMAND)", opts.Command[0], opts.Instance, f.Name, opts.Instance)
				}
			}
			if len(opts.Command) == 0 {
				opts.Command = nil // an interactive login shell
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	// Everything after INSTANCE is the command, its flags included (as in limactl shell).
	cmd.Flags().SetInterspersed(false)
	cmdutil.AddWorkdirFlag(cmd, &opts.Workdir)
	cmdutil.AddSessionFlag(cmd, &opts.Session, cmdutil.SessionUsage)
	cmdutil.AddStagingFlags(cmd, &opts.Excludes, &opts.IncludeIgnored)
	cmdutil.AddNetworkFlag(cmd, &opts.Network)
	flags := cmd.Flags()
	flags.StringVar(&opts.Shell, "shell", "", "Shell interpreter in the guest, e.g. /bin/bash (default: the guest user's login shell)")
	flags.StringArrayVar(&opts.Env, "env", nil, "Pass the host's environment variable `NAME` to the guest, or set NAME=VALUE (repeatable)")
	flags.BoolVar(&opts.AgentEnv, "agent-env", false, "Pass the API keys and endpoints of the known agents that are set on the host (see docs/shell.md); the keys' values enter the VM: --agent-secrets keeps them on the host")
	cmdutil.AddSecretFlags(cmd, &opts.Secrets)
	cmdutil.AddLoginFlag(cmd, &opts.Secrets)
	flags.BoolVar(&opts.Sync, "sync", false, "Bring host edits made since the copy was staged or last synced into it first (as `limactl mcp sync`)")
	flags.BoolVarP(&opts.Yes, "yes", "y", false, "After the command, apply every change that is not a conflict, without asking (conflicts are listed, not applied)")
	flags.BoolVar(&opts.NoReview, "no-review", false, "After the command, leave the changes pending in the guest copy (review them later with `limactl mcp review`)")
	flags.BoolVar(&opts.Accessible, "accessible", false, "Plain prompts for screen readers instead of the full-screen review")
	flags.StringVar(&opts.Publish, "publish", "", "The host `ADDRESS` the command's dev servers are forwarded to while it runs (default 127.0.0.1: this machine only; 0.0.0.0: every interface)")
	cmd.MarkFlagsMutuallyExclusive("yes", "no-review")
	return cmd
}
