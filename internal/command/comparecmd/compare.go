// Package comparecmd is what `limactl mcp compare` does: it compares the pending changes of
// several sessions of one working directory (typically forks of one session, each tried by an
// agent), per file.
package comparecmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/cmdutil"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// Options are the parsed command line of compare and what it depends on.
type Options struct {
	IO       *iostreams.IOStreams
	Instance string
	// Sessions are the sessions' names ("default": the unnamed one), two or more.
	Sessions []string
	// Workdir is --workdir ("": the current directory).
	Workdir string
	JSON    bool

	// Open opens the instance (default: sessionopen.HostOpener(IO.ErrOut)).
	Open sessionopen.Opener
}

// compareWait bounds the comparison (a scan and the diffs of every session).
const compareWait = 10 * time.Minute

// maxSessions bounds how many sessions one comparison reads.
const maxSessions = 16

// JSON is the output of `compare --json`.
type JSON struct {
	SchemaVersion int    `json:"schema_version"`
	Instance      string `json:"instance"`
	Workdir       string `json:"workdir"`
	*staging.Comparison
}

// Run compares the sessions.
func Run(ctx context.Context, opts *Options) error {
	ios := opts.IO
	names, err := cmdutil.Sessions{Verb: "compare", Names: opts.Sessions, Max: maxSessions}.Parse()
	if err != nil {
		return err
	}
	ref, err := cmdutil.Resolve(cmdutil.Selector{IO: ios, Verb: "compare", Instance: opts.Instance, Workdir: opts.Workdir, Session: names[0], Open: opts.Open})
	if err != nil {
		return err
	}
	t, sessions, err := ref.OpenCompared(ctx, names[1:])
	if err != nil {
		return err
	}
	defer t.Close()
	workdir := sessions[0].State.Workdir
	// A compare only reads: a session under a policy is read as its agent without its set-up
	// (Target.ReadingSession), all at once.
	read, doneReading := t.ReadingSessions(ctx, sessions)
	defer doneReading()
	var cmp *staging.Comparison
	err = read[0].Within(ctx, compareWait, "comparing the sessions", func(ctx context.Context) error {
		var err error
		cmp, err = staging.Compare(ctx, read)
		return err
	})
	if err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(ios.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(JSON{SchemaVersion: 1, Instance: t.Instance.Name, Workdir: workdir, Comparison: cmp})
	}
	Print(ios.Out, workdir, cmp)
	fmt.Fprintf(ios.Out, "\nReview and apply the one you keep: `limactl mcp review %s --session NAME`, or take a version per file or hunk: `limactl mcp review %s --compare %s`; then `limactl mcp discard %s --all-but NAME`.\n", t.Instance.Name, t.Instance.Name, strings.Join(labels(cmp), ","), t.Instance.Name)
	return nil
}

// Print writes the comparison for a person: a table of every changed path, one column per
// session, and the verdict.
func Print(w io.Writer, workdir string, cmp *staging.Comparison) {
	var parts []string
	for _, s := range cmp.Sessions {
		parts = append(parts, fmt.Sprintf("%s (%s)", s.Name, words.Count(s.Changes, "change")))
	}
	fmt.Fprintf(w, "%s compared in %s: %s\n", words.Count(len(cmp.Sessions), "session"), termsafe.String(workdir), strings.Join(parts, ", "))
	if len(cmp.Files) == 0 {
		fmt.Fprintln(w, "None of them changed anything.")
		return
	}
	counts := map[string]int{}
	for _, f := range cmp.Files {
		counts[f.Verdict]++
	}
	fmt.Fprintf(w, "%s changed: %d changed by one session only, %d where the sessions that changed it agree, %d where they differ\n\n",
		words.Count(len(cmp.Files), "path"), counts["only"], counts["agree"], counts["differ"])
	width := len("PATH")
	for _, f := range cmp.Files {
		width = max(width, min(len(termsafe.Path(string(f.Path))), 60))
	}
	colw := make([]int, len(cmp.Sessions))
	fmt.Fprintf(w, "%-*s", width, "PATH")
	for i, s := range cmp.Sessions {
		colw[i] = max(len(s.Name), 14)
		fmt.Fprintf(w, "  %-*s", colw[i], s.Name)
	}
	fmt.Fprintln(w, "  VERDICT")
	for _, f := range cmp.Files {
		fmt.Fprintf(w, "%-*s", width, termsafe.Path(string(f.Path)))
		by := map[string]staging.SessionChange{}
		for _, c := range f.Changes {
			by[c.Session] = c
		}
		letter := map[string]string{}
		for i, v := range f.Variants {
			for _, n := range v {
				letter[n] = string(rune('A' + i%26))
			}
		}
		for i, s := range cmp.Sessions {
			cell := "·"
			if c, ok := by[s.Name]; ok {
				cell = cellOf(c)
				if f.Verdict == "differ" {
					cell += " " + letter[s.Name]
				}
			}
			fmt.Fprintf(w, "  %-*s", colw[i], cell)
		}
		fmt.Fprintf(w, "  %s\n", verdict(f))
	}
	if n := len(cmp.BaselinesDiffer); n > 0 {
		fmt.Fprintf(w, "\nNote: the sessions' baselines differ at %s (one of them applied or synced since they were forked), so their changes there are against different host states.\n", words.Count(n, "path"))
	}
	fmt.Fprintln(w, "\n· unchanged; A, B, …: the distinct results where the sessions differ; line counts against the baseline.")
}

// labels are the sessions' names as --compare takes them.
func labels(cmp *staging.Comparison) []string {
	var out []string
	for _, s := range cmp.Sessions {
		out = append(out, s.Name)
	}
	return out
}

// cellOf is a session's change in a column: a letter for its kind and the line counts.
func cellOf(c staging.SessionChange) string {
	k := map[staging.Kind]string{staging.Added: "A", staging.Modified: "M", staging.Deleted: "D", staging.ModeChanged: "m", staging.TypeChanged: "T", staging.LinkChanged: "L"}[c.Kind]
	if c.Added < 0 {
		return k
	}
	return fmt.Sprintf("%s +%d −%d", k, c.Added, c.Deleted)
}

// verdict says where the sessions agree and where they differ.
func verdict(f staging.ComparedFile) string {
	switch f.Verdict {
	case "only":
		return "only " + f.Changes[0].Session
	case "agree":
		return "agree (" + strings.Join(f.Variants[0], ", ") + ")"
	}
	var vs []string
	for i, v := range f.Variants {
		vs = append(vs, string(rune('A'+i%26))+": "+strings.Join(v, ", "))
	}
	return fmt.Sprintf("differ (%d versions; %s)", len(f.Variants), strings.Join(vs, "; "))
}
