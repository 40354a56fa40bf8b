package configurecmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/agentconfig"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/workdirpath"
)

// list says, for each agent (or the one named), whether this project's config (--user: the
// user's) runs the server as configure would write it, and whether the agent's own file and
// shell tools are off; it writes nothing.
func list(opts *Options) error {
	ios := opts.IO
	workdir, err := workdirpath.Abs(opts.Workdir)
	if err != nil {
		return err
	}
	agents := agentconfig.AgentNames()
	if opts.Agent != "" {
		if !slices.Contains(agents, opts.Agent) {
			return fmt.Errorf("unknown agent %q (known: %s)", opts.Agent, strings.Join(agents, ", "))
		}
		agents = []string{opts.Agent}
	}
	scope := "the project " + workdir
	if opts.User {
		scope = "your user configuration"
	}
	name := opts.Name
	if name == "" {
		name = "lima"
	}
	fmt.Fprintf(ios.Out, "MCP server %q running `limactl mcp serve %s`, in %s:\n", name, opts.Instance, scope)
	for _, agent := range agents {
		st, err := agentconfig.StatusOf(agentconfig.Options{Agent: agent, Instance: opts.Instance, Workdir: workdir, User: opts.User, ServerName: opts.Name})
		if err != nil {
			fmt.Fprintf(ios.Out, "  %-9s cannot tell: %v\n", agent, err)
			continue
		}
		var files []string
		for _, f := range st.Files {
			if rel, ok := tree.Inside(workdir, f); ok && !opts.User {
				f = rel
			}
			files = append(files, f)
		}
		var state string
		switch {
		case !st.Configured:
			state = "not configured: `" + configureCommand(opts, agent, false) + "`"
		case st.BuiltinsOff && st.CanDisable:
			state = "configured; its own file and shell tools off (" + strings.Join(files, ", ") + ")"
		case st.CanDisable:
			state = "configured; its own file and shell tools on: `" + configureCommand(opts, agent, true) + "` turns them off (" + strings.Join(files, ", ") + ")"
		default:
			state = "configured; its own tools cannot be turned off from " + scope + " (see the notes of `" + configureCommand(opts, agent, true) + " --dry-run`) (" + strings.Join(files, ", ") + ")"
		}
		fmt.Fprintf(ios.Out, "  %-9s %s\n", agent, state)
	}
	return nil
}

// configureCommand is the configure command line for agent with opts' scope.
func configureCommand(opts *Options, agent string, disable bool) string {
	cmd := "limactl mcp configure " + agent + " --instance " + opts.Instance
	if opts.User {
		cmd += " --user"
	}
	if opts.Name != "" && opts.Name != "lima" {
		cmd += " --name " + opts.Name
	}
	if disable {
		cmd += " --disable-builtin-tools"
	}
	return cmd
}
