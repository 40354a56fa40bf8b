package reviewcmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

func kindMark(it *review.Item) string {
	switch {
	case it.Refused != "":
		return "!"
	case it.Conflict:
		return "C"
	case it.From != nil:
		return "R"
	case it.Base == nil:
		return "A"
	case it.Guest == nil:
		return "D"
	}
	return "M"
}

func printSummary(w io.Writer, cs *review.Changeset) {
	s := cs.Summary()
	fmt.Fprintf(w, "%s changed by the agent (+%d −%d lines), %s, %d refused:\n", words.Count(s.Files, "file"), s.Added, s.Removed, words.Count(s.Conflicts, "conflict"), s.Refused)
	for _, it := range cs.Items {
		line := fmt.Sprintf("  %s %s", kindMark(it), it.Display)
		if it.Added+it.Removed > 0 {
			line += fmt.Sprintf("  +%d −%d", it.Added, it.Removed)
		}
		if it.Refused != "" {
			line += "  (refused: " + it.Refused + ")"
		} else if it.Description != "" && it.Description != "modified" {
			line += "  (" + it.Description + ")"
		}
		if what := it.SetsPolicy(); what != "" {
			line += "  [SETS AGENT POLICY: " + what + "]"
		}
		fmt.Fprintln(w, termsafe.String(line))
	}
	printIgnored(w, cs)
}

func printIgnored(w io.Writer, cs *review.Changeset) {
	for _, it := range cs.Ignored {
		fmt.Fprintln(w, termsafe.String(fmt.Sprintf("  ignored %s: %s", it.Display, it.Refused)))
	}
}

func printConflicts(w io.Writer, cs *review.Changeset, instance string) {
	for _, it := range cs.Items {
		if len(it.Collides) > 0 && it.Refused == "" {
			fmt.Fprintf(w, "  collision (not applied): %s — one name with %s on this host directory; review in a terminal to choose, or name the one to take, in the working directory: `limactl mcp review %s %s --yes`\n", termsafe.String(it.Display), termsafe.String(strings.Join(it.Collides, " and ")), termsafe.String(instance), termsafe.String(it.Display))
			continue
		}
		if it.Conflict && it.Refused == "" {
			fmt.Fprintf(w, "  conflict (not applied): %s — the host changed it too; review it in a terminal to choose\n", termsafe.String(it.Display))
		}
	}
}

func printRefused(w io.Writer, refused []string) {
	for _, r := range refused {
		fmt.Fprintf(w, "  refused %s\n", termsafe.String(r))
	}
}

// The changeset for scripts (`review --json`): the schema is docs/review-json.md, and
// TestReviewJSONSchema keeps the two in step. Every key is snake_case; every list is a list
// (never null); a change of meaning gets a new schema_version.

// jsonSchemaVersion is the version of the --json schema.
const jsonSchemaVersion = 1

type changesetDoc struct {
	SchemaVersion int    `json:"schema_version"`
	Workdir       string `json:"workdir"`
	// Session is the session's name, left out for the unnamed session.
	Session string     `json:"session,omitempty"`
	Summary summaryDoc `json:"summary"`
	Items   []itemDoc  `json:"items"`
	Ignored []itemDoc  `json:"ignored"`
	// Network is the session's network policy and what the agent did on the network.
	Network *staging.NetworkReport `json:"network"`
	// Secrets are the lines of the session's log of secrets' uses (secrets.UsesSummary), left
	// out when it used none.
	Secrets []string `json:"secrets,omitempty"`
	// Requests are the lines of the HTTPS requests the network rules ruled on
	// (secrets.Summaries: "github.com: 3 HTTPS requests allowed by the network rules, 1
	// refused (the last: POST /…)"), left out when there were none.
	Requests []string `json:"requests,omitempty"`
	// Timeline is the totals of the session's timeline (limactl mcp log; docs/log.md), left
	// out when it cannot be read.
	Timeline *timeline.Counts `json:"timeline,omitempty"`
}

type summaryDoc struct {
	Files        int `json:"files"`
	Conflicts    int `json:"conflicts"`
	Refused      int `json:"refused"`
	LinesAdded   int `json:"lines_added"`
	LinesRemoved int `json:"lines_removed"`
}

type itemDoc struct {
	Path         tree.Name   `json:"path"`
	Kind         string      `json:"kind"`
	Conflict     bool        `json:"conflict,omitempty"`
	Refused      string      `json:"refused,omitempty"`
	Description  string      `json:"description,omitempty"`
	Added        int         `json:"lines_added"`
	Removed      int         `json:"lines_removed"`
	Hunks        int         `json:"hunks"`
	RenamedFrom  *tree.Name  `json:"renamed_from,omitempty"`
	CollidesWith []tree.Name `json:"collides_with,omitempty"`
	// Provenance is which recorded calls produced the change (docs/log.md), and History the
	// same in one line.
	Provenance *timeline.Provenance `json:"provenance,omitempty"`
	History    string               `json:"history,omitempty"`
	// SetsPolicy says what agent or policy configuration the file is (review.SetsPolicy): a
	// change to it can widen what the agent may do or reach.
	SetsPolicy string `json:"sets_policy,omitempty"`
}

// changesetJSON is the changeset for scripts.
func changesetJSON(cs *review.Changeset, session string, network *staging.NetworkReport, uses, requests []string, tl *timeline.Timeline) changesetDoc {
	s := cs.Summary()
	doc := changesetDoc{
		SchemaVersion: jsonSchemaVersion,
		Workdir:       cs.Workdir,
		Session:       session,
		Summary:       summaryDoc{Files: s.Files, Conflicts: s.Conflicts, Refused: s.Refused, LinesAdded: s.Added, LinesRemoved: s.Removed},
		Items:         []itemDoc{},
		Ignored:       []itemDoc{},
		Network:       network,
		Secrets:       uses,
		Requests:      requests,
	}
	if tl != nil && tl.Counts.Events > 0 {
		doc.Timeline = &tl.Counts
	}
	for _, it := range cs.Items {
		d := itemDoc{Path: tree.Name(it.Path), Kind: string(it.Kind), Conflict: it.Conflict, Refused: it.Refused, Description: it.Description, Added: it.Added, Removed: it.Removed, Hunks: len(it.Hunks),
			Provenance: it.Provenance, History: it.History(), SetsPolicy: it.SetsPolicy()}
		if it.From != nil {
			from := tree.Name(it.From.Path)
			d.RenamedFrom = &from
		}
		for _, o := range it.Collides {
			d.CollidesWith = append(d.CollidesWith, tree.Name(o))
		}
		doc.Items = append(doc.Items, d)
	}
	for _, it := range cs.Ignored {
		doc.Ignored = append(doc.Ignored, itemDoc{Path: tree.Name(it.Path), Kind: string(it.Kind), Refused: it.Refused})
	}
	return doc
}
