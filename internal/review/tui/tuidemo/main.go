// Command tuidemo runs the review TUI on a changeset read from a JSON file, for tests:
//
//	tuidemo [-accessible] [-width N -height N] [-notice LINE] [-secrets LINE]... [-timeline DIR] changeset.json result.json
//
// It writes the decisions as JSON to result.json, or the JSON string "aborted", or
// {"error": "..."} for any other error.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

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
	decs, err := tui.Run(&cs, os.Stdin, os.Stdout, tui.Options{Accessible: *accessible, Width: *width, Height: *height, Notice: *notice, Secrets: secretLines, Timeline: tl})
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

// lines is a flag given once per line.
type lines []string

func (l *lines) String() string { return strings.Join(*l, "\n") }

func (l *lines) Set(s string) error {
	*l = append(*l, s)
	return nil
}
