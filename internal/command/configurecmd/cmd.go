package configurecmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/agentconfig"
	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/instance"
)

// NewCmd is `configure`: the cobra command, which binds the command line into Options and calls Run
// (runF instead, when a test gives one: Options and Run are tested without cobra).
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "configure AGENT | --list",
		Short: "Configure an AI agent (claude, gemini, codex, cursor, opencode, vscode, zed) to use \"limactl mcp serve\" for its tools",
		Long: `Configure an AI agent to get its file and shell tools from "limactl mcp serve INSTANCE".

AGENT is one of:
  claude   Claude Code: .mcp.json in the project (--user: ~/.claude.json)
  gemini   Gemini CLI: .gemini/settings.json (--user: ~/.gemini/settings.json)
  codex    Codex: .codex/config.toml (--user: ~/.codex/config.toml)
  cursor   Cursor: .cursor/mcp.json (--user: ~/.cursor/mcp.json)
  opencode OpenCode: opencode.json (--user: ~/.config/opencode/opencode.json)
  vscode   VS Code (GitHub Copilot): .vscode/mcp.json (--user: the default profile's mcp.json)
  zed      Zed: .zed/settings.json (--user: ~/.config/zed/settings.json)

The server is added to the file the agent already has: other servers and settings are kept as
they are, running the command again changes nothing, and a file that cannot be parsed is left
alone. --create makes the instance (without host mounts) if it does not exist, or starts it.
--disable-builtin-tools also turns off the agent's own file and shell tools where the
agent has a setting for it; the notes printed at the end say what stays on.

--list shows, for every agent (or the one named), whether the project (--user: your user
configuration) already runs the server for --instance, and whether the agent's own tools
are off; it writes nothing.

Without --network, configure asks in a terminal which network policy the agent gets,
proposing the presets of what the project's top holds (go.mod: @go, package.json: @npm,
requirements.txt or pyproject.toml: @pypi, Cargo.toml: @crates, Gemfile: @rubygems, pom.xml or
build.gradle: @maven), or keeping the policy of the project's existing session. Without a
terminal (or in a dry run) nothing is asked: the default stays (the session's policy, else
open), and the output says what the project seems to need.`,
		Example: `  limactl mcp configure claude --instance agent --create
  limactl mcp configure gemini --instance dev --disable-builtin-tools
  limactl mcp configure codex --user --dry-run
  limactl mcp configure zed --user --disable-builtin-tools
  limactl mcp configure --list --instance agent`,
		Args: func(cmd *cobra.Command, args []string) error {
			if opts.List {
				return cobra.MaximumNArgs(1)(cmd, args)
			}
			if len(args) != 1 {
				return fmt.Errorf("configure needs the agent to configure, one of %s (or --list to see which are configured)", strings.Join(agentconfig.AgentNames(), ", "))
			}
			return nil
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, a := range agentconfig.Agents() {
				names = append(names, cobra.CompletionWithDesc(a.Name, a.Title))
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				opts.Agent = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&opts.Instance, "instance", "default", "Lima instance the agent's tools run in")
	flags.BoolVar(&opts.User, "user", false, "Configure the user's global config instead of the project's")
	flags.BoolVar(&opts.DryRun, "dry-run", false, "Show the changes as a diff and write nothing")
	flags.BoolVar(&opts.DisableBuiltinTools, "disable-builtin-tools", false, "Also turn off the agent's own file and shell tools, where it can")
	flags.StringVar(&opts.Name, "name", "lima", "Name of the MCP server in the agent's config")
	flags.StringVar(&opts.Workdir, "workdir", "", "Project directory (default: the current directory)")
	_ = cmd.MarkFlagDirname("workdir")
	flags.BoolVar(&opts.Create, "create", false, "Create and start the instance (without host mounts) if it does not exist, start it if it is stopped")
	flags.StringVar(&opts.Network, "network", "", "Start the server with this network `POLICY` (serve --network: none, allow:HOST[,HOST...] or open); without it, configure asks in a terminal, proposing the presets of the project's files")
	cmdutil.AddSecretFlags(cmd, &opts.Secrets)
	flags.StringVar(&opts.Session, "session", "", "Start the server on this session `NAME` of the project (serve --session): a staged copy of this agent's own, reviewed separately (docs/sessions.md)")
	flags.StringVar(&opts.Template, "template", instance.DefaultTemplate, "Template of an instance made by --create")
	flags.BoolVar(&opts.List, "list", false, "Show which agents are configured for the project (or with --user) and write nothing")
	cmd.MarkFlagsMutuallyExclusive("list", "dry-run")
	cmd.MarkFlagsMutuallyExclusive("list", "create")
	cmd.MarkFlagsMutuallyExclusive("list", "disable-builtin-tools")
	return cmd
}
