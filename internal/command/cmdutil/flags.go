package cmdutil

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/instance"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// InstanceArg is the instance named on the command line, or Lima's default.
func InstanceArg(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	return instance.DefaultName
}

// AddWorkdirFlag binds --workdir, which picks the working directory of a session.
func AddWorkdirFlag(cmd *cobra.Command, workdir *string) {
	cmd.Flags().StringVar(workdir, "workdir", "", "Working directory (default: the current directory)")
}

// AddSessionFlag binds --session, which picks one of a working directory's staged sessions
// (docs/sessions.md).
func AddSessionFlag(cmd *cobra.Command, session *string, usage string) {
	cmd.Flags().StringVar(session, "session", "", usage)
}

// SessionUsage is the --session help of the commands that act on one session.
const SessionUsage = "The working directory's session `NAME`: a separate staged copy, reviewed separately (default: the unnamed session; see docs/sessions.md)"

// AddStagingFlags binds the flags that shape what a session stages.
func AddStagingFlags(cmd *cobra.Command, excludes *[]string, includeIgnored *bool) {
	cmd.Flags().StringArrayVar(excludes, "exclude", nil, "Do not stage paths matching this gitignore-style `PATTERN` (repeatable)")
	cmd.Flags().BoolVar(includeIgnored, "include-ignored", false, "Also stage what .gitignore ignores (the project ignore file and --exclude still apply)")
}

// AddNetworkFlag adds --network: the session's network policy, kept with the session until the
// person changes it (docs/network.md).
func AddNetworkFlag(cmd *cobra.Command, network *string) {
	cmd.Flags().StringVar(network, "network", "", "The agent's network `POLICY`, kept with the session: open (the guest's network, as without limactl-mcp), none (no egress but the guest's loopback), or allow:HOST[,HOST...] (only these host names, *.example.com for subdomains, @PRESET for a preset's hosts (limactl mcp network presets), through a proxy in the guest); default: the session's, else open")
	_ = cmd.RegisterFlagCompletionFunc("network", func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if list, ok := strings.CutPrefix(toComplete, "allow:"); ok {
			// The presets after the names already given: allow:example.com,@<TAB>.
			before := "allow:" + list[:strings.LastIndex(list, ",")+1]
			var out []string
			for _, p := range netpolicy.Presets() {
				out = append(out, before+"@"+p.Name+"\t"+p.Summary)
			}
			return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
		}
		return []string{"open", "none", "allow:"}, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
}

// CompleteInstances completes instance names from `limactl list`.
func CompleteInstances(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	names, err := instance.Names(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, toComplete) {
			out = append(out, n)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
