// Command tuidemo runs the review TUI on a changeset read from a JSON file, for tests:
//
//	tuidemo [-accessible] [-width N -height N] [-notice LINE] [-secrets LINE]... [-timeline DIR] [-watch DIR] [-nowatch LINE] changeset.json result.json
//
// With -watch, w shows the refused destinations of DIR/record.json (`net report`'s answer for
// the user "demo"), and an allow adds the destination to the policy in DIR/policy, as the
// session's policy is changed by the review command.
//
// It writes the decisions as JSON to result.json, or the JSON string "aborted", or
// {"error": "..."} for any other error.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/netwatch"
	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/review/tui"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
)

func main() {
	accessible := flag.Bool("accessible", false, "accessible mode")
	width := flag.Int("width", 0, "width (0: terminal)")
	height := flag.Int("height", 0, "height (0: terminal)")
	notice := flag.String("notice", "", "a line above the list of files")
	var secretLines lines
	flag.Var(&secretLines, "secrets", "a line of the session's secrets' uses (repeat for more)")
	tlDir := flag.String("timeline", "", "the session directory whose timeline the l key shows")
	watchDir := flag.String("watch", "", "the directory of the record and the policy the w key watches")
	noWatch := flag.String("nowatch", "", "what w says without -watch")
	flag.Parse()

	// As limactl-mcp's root command does, this process handles SIGINT for its whole life:
	// the TUI's own handler comes and goes with each screen, and a second SIGINT that
	// arrives after it is gone (timeout(1) forwards the Ctrl-C the terminal already sent)
	// must not kill the process before it writes its result.
	signal.Notify(make(chan os.Signal, 1), os.Interrupt)
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: tuidemo [-accessible] changeset.json result.json")
		os.Exit(2)
	}
	data, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var cs review.Changeset
	if err := json.Unmarshal(data, &cs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var tl *timeline.Timeline
	if *tlDir != "" {
		if tl, err = timeline.Read(*tlDir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	opts := tui.Options{Accessible: *accessible, Width: *width, Height: *height, Notice: *notice, Secrets: secretLines, Timeline: tl, NoWatch: *noWatch}
	if *watchDir != "" {
		opts.Watch = watchSource(*watchDir)
	}
	decs, err := tui.Run(&cs, os.Stdin, os.Stdout, opts)
	var result any = decs
	switch {
	case errors.Is(err, tui.ErrAborted):
		result = "aborted"
	case err != nil:
		result = map[string]string{"error": err.Error()}
	}
	out, err := json.Marshal(result)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Write atomically: the test polls for the file.
	tmp := flag.Arg(1) + ".tmp"
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.Rename(tmp, flag.Arg(1)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// watchSource watches the record in dir and changes the policy in dir (see the package's
// comment).
func watchSource(dir string) *netwatch.Source {
	policyFile := filepath.Join(dir, "policy")
	policy := func() string {
		b, err := os.ReadFile(policyFile)
		if err != nil {
			return "unreadable: " + err.Error()
		}
		return strings.TrimSpace(string(b))
	}
	return &netwatch.Source{
		Read: func(context.Context) (*netpolicy.Record, error) {
			data, err := os.ReadFile(filepath.Join(dir, "record.json"))
			if err != nil {
				return nil, err
			}
			rec, err := netpolicy.ParseRecord(data, "demo")
			if err != nil {
				return nil, err
			}
			return &rec, nil
		},
		Allow: func(_ context.Context, entry string, save bool) (string, error) {
			prev := policy()
			next := prev + "," + entry
			if err := os.WriteFile(policyFile, []byte(next+"\n"), 0o644); err != nil {
				return "", err
			}
			return fmt.Sprintf("allowed %s: policy %s (was %s), save %v", entry, next, prev, save), nil
		},
		Policy:   policy,
		Title:    "the demo session",
		Interval: 100 * time.Millisecond,
	}
}

// lines is a flag given once per line.
type lines []string

func (l *lines) String() string { return strings.Join(*l, "\n") }

func (l *lines) Set(s string) error {
	*l = append(*l, s)
	return nil
}
