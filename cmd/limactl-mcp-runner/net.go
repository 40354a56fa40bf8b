package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy/enforce"
)

const netUsage = `usage (as root, through sudo -n):
  limactl-mcp-runner net ensure --user lmcp-NAME --policy none|allow:HOST[,HOST...]|open [--own DIR] [--secrets-stdin] [--live]
  limactl-mcp-runner net remove --user lmcp-NAME
  limactl-mcp-runner net release --user lmcp-NAME [--own DIR]
  limactl-mcp-runner net report --user lmcp-NAME [--entries N] [--watch [--watcher ID]]
  limactl-mcp-runner net unwatch --user lmcp-NAME --watcher ID
  limactl-mcp-runner net report --users lmcp-A,lmcp-B,...   (one line each: its record, or {"user","error"})
  limactl-mcp-runner net decide --user lmcp-NAME --id ID --decision once|deny
  limactl-mcp-runner net as --user lmcp-NAME -- COMMAND [ARG...]
  limactl-mcp-runner net proxy   (run by systemd: limactl-mcp-netproxy.service)`

// runNet runs a `net` subcommand and returns the exit code: 0, 1 on failure (the reason on
// stderr), 2 for a bad command line.
func runNet(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, netUsage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	layout := enforce.DefaultLayout()
	fs := flag.NewFlagSet("net "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, netUsage) }
	user := fs.String("user", "", "the agent user (lmcp-...)")
	var err error
	switch args[0] {
	case "ensure":
		spec := fs.String("policy", "", "the network policy")
		own := fs.String("own", "", "the staged copy to hand to the user")
		secretsStdin := fs.Bool("secrets-stdin", false, "read the session's secrets setup (bound hosts, CA, placeholders: JSON) from stdin")
		live := fs.Bool("live", false, "a change of a running session's policy: keep the secrets its set-up gave")
		if fs.Parse(args[1:]) != nil || fs.NArg() > 0 || *user == "" || *spec == "" {
			fs.Usage()
			return 2
		}
		var setup *netpolicy.SecretsSetup
		if *secretsStdin {
			data, rerr := io.ReadAll(io.LimitReader(os.Stdin, netpolicy.MaxSecretsSetup+1))
			if rerr == nil {
				setup, rerr = netpolicy.ParseSecretsSetup(data)
			}
			if rerr != nil {
				fmt.Fprintf(stderr, "limactl-mcp-runner net ensure: --secrets-stdin: %v\n", rerr)
				return 1
			}
		}
		var res netpolicy.EnsureResult
		res, err = enforce.Ensure(ctx, enforce.EnsureOptions{User: *user, Policy: *spec, Own: *own,
			StagingUID: enforce.StagingUIDFromSudo(), StagingGID: enforce.StagingGIDFromSudo(), Secrets: setup, Live: *live, Layout: layout})
		if err == nil {
			line, _ := json.Marshal(res)
			fmt.Fprintf(stdout, "%s\n", line)
		}
	case "remove":
		if fs.Parse(args[1:]) != nil || fs.NArg() > 0 || *user == "" {
			fs.Usage()
			return 2
		}
		err = enforce.Remove(ctx, layout, *user)
	case "report":
		entries := fs.Int("entries", 0, "how many of the raw log's last entries to include")
		watch := fs.Bool("watch", false, "a person watches the user: hold the connections the policy refuses while they decide")
		watcher := fs.String("watcher", "", "with --watch: the watch's id (16 hex digits), for its net unwatch when it stops")
		users := fs.String("users", "", "several agent users, comma-separated: one line each")
		if fs.Parse(args[1:]) != nil || fs.NArg() > 0 || (*user == "") == (*users == "") || (*users != "" && (*watch || *entries != 0)) || (*watcher != "" && !*watch) {
			fs.Usage()
			return 2
		}
		if *users != "" {
			enforce.ReportEach(layout, strings.Split(*users, ","), stdout)
			return 0
		}
		if *watch {
			err = enforce.MarkWatched(layout, *user, *watcher)
		}
		var rec netpolicy.Record
		if err == nil {
			rec, err = enforce.Report(layout, *user, *entries)
		}
		if err == nil {
			line, _ := json.Marshal(rec)
			fmt.Fprintf(stdout, "%s\n", line)
		}
	case "unwatch":
		watcher := fs.String("watcher", "", "the id the watch gave net report --watch --watcher")
		if fs.Parse(args[1:]) != nil || fs.NArg() > 0 || *user == "" || *watcher == "" {
			fs.Usage()
			return 2
		}
		err = enforce.Unwatch(layout, *user, *watcher)
	case "decide":
		id := fs.String("id", "", "the held connection's id (net report's)")
		decision := fs.String("decision", "", "once or deny")
		if fs.Parse(args[1:]) != nil || fs.NArg() > 0 || *user == "" || *id == "" || *decision == "" {
			fs.Usage()
			return 2
		}
		err = enforce.Decide(layout, *user, *id, *decision)
	case "release":
		own := fs.String("own", "", "the staged copy to hand back to the user who ran sudo")
		if fs.Parse(args[1:]) != nil || fs.NArg() > 0 || *user == "" {
			fs.Usage()
			return 2
		}
		err = enforce.Release(ctx, layout, *user, *own, enforce.StagingUIDFromSudo(), enforce.StagingGIDFromSudo())
	case "as":
		if fs.Parse(args[1:]) != nil || fs.NArg() == 0 || *user == "" {
			fs.Usage()
			return 2
		}
		stop() // the command gets the signals from here on
		err = enforce.RunAs(layout, *user, fs.Args())
	case "proxy":
		if len(args) != 1 {
			fs.Usage()
			return 2
		}
		err = enforce.RunProxy(ctx, layout)
	default:
		fmt.Fprintln(stderr, netUsage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "limactl-mcp-runner net %s: %v\n", args[0], err)
		return 1
	}
	return 0
}
