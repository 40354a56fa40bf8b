package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/limactl-mcp/limactl-mcp/internal/instance"
)

// instanceArg is the instance named on the command line, or Lima's default.
func instanceArg(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	return instance.DefaultName
}

// addWorkdirFlag binds --workdir, which picks the working directory of a session.
func addWorkdirFlag(cmd *cobra.Command, workdir *string) {
	cmd.Flags().StringVar(workdir, "workdir", "", "Working directory (default: the current directory)")
}

// addSessionFlag binds --session, which picks one of a working directory's staged sessions
// (docs/sessions.md).
func addSessionFlag(cmd *cobra.Command, session *string, usage string) {
	cmd.Flags().StringVar(session, "session", "", usage)
}

// sessionUsage is the --session help of the commands that act on one session.
const sessionUsage = "The working directory's session `NAME`: a separate staged copy, reviewed separately (default: the unnamed session; see docs/sessions.md)"

// addStagingFlags binds the flags that shape what a session stages.
func addStagingFlags(cmd *cobra.Command, excludes *[]string, includeIgnored *bool) {
	cmd.Flags().StringArrayVar(excludes, "exclude", nil, "Do not stage paths matching this gitignore-style `PATTERN` (repeatable)")
	cmd.Flags().BoolVar(includeIgnored, "include-ignored", false, "Also stage what .gitignore ignores (the project ignore file and --exclude still apply)")
}

// addNetworkFlag adds --network: the session's network policy, kept with the session until the
// person changes it (docs/network.md).
func addNetworkFlag(cmd *cobra.Command, network *string) {
	cmd.Flags().StringVar(network, "network", "", "The agent's network `POLICY`, kept with the session: open (the guest's network, as without limactl-mcp), none (no egress but the guest's loopback), or allow:HOST[,HOST...] (only these host names, *.example.com for subdomains, through a proxy in the guest); default: the session's, else open")
	_ = cmd.RegisterFlagCompletionFunc("network", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"open", "none", "allow:"}, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
}

// completeInstances completes instance names from `limactl list`.
func completeInstances(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
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
