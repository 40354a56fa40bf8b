package reviewcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
	"github.com/limactl-mcp/limactl-mcp/internal/words"
)

// A review against a checkpoint (--since) shows what changed in the guest copy since the
// checkpoint was taken: the agent's work since then, and what a sync or a restore brought in.
// The host plays no part and nothing is written: to apply, review without --since.

// sinceJSON is the --json output of a review --since.
type sinceJSON struct {
	Checkpoint sinceCheckpointJSON `json:"checkpoint"`
	Changes    []sinceChangeJSON   `json:"changes"`
	// Secrets are the lines of the session's log of secrets' uses (secrets.UsesSummary), as
	// a plain review has them: the whole session's, not only since the checkpoint.
	Secrets []string `json:"secrets,omitempty"`
	// Requests are the lines of the HTTPS requests the network rules ruled on
	// (secrets.Summaries: "github.com: 3 HTTPS requests allowed by the network rules, 1
	// refused (the last: POST /…)"), left out when there were none.
	Requests []string `json:"requests,omitempty"`
}

type sinceCheckpointJSON struct {
	ID    int    `json:"id"`
	Label string `json:"label,omitempty"`
	Auto  bool   `json:"auto,omitempty"`
	Time  string `json:"time"`
}

type sinceChangeJSON struct {
	Path tree.Name    `json:"path"`
	Kind staging.Kind `json:"kind"`
}

func runSince(ctx context.Context, opts *Options, sess *staging.Session, paths []string) error {
	if opts.Yes || opts.Undo || opts.DryRun {
		return errors.New("--since shows changes and writes nothing: it does not go with --yes, --undo or --dry-run")
	}
	since, err := sess.ChangesSince(ctx, opts.Since)
	if err != nil {
		return err
	}
	var changes []staging.Change
	for _, c := range since.Changes.Changes {
		if len(paths) == 0 || tree.WithinAny(paths, string(c.Path)) {
			changes = append(changes, c)
		}
	}
	out := opts.IO.Out
	cp := since.Checkpoint
	// How the session's requests used its secrets, as a plain review shows it (the whole
	// session's: the log of uses is the host's, the checkpoint the guest's).
	uses, requests := secrets.Summaries(sess.Store().SessionDir(sess.State.ID))
	switch {
	case opts.JSON:
		id, _ := strconv.Atoi(cp.ID) // checked: a number (guest/replies_checkpoint.go)
		j := sinceJSON{Checkpoint: sinceCheckpointJSON{ID: id, Label: cp.Label, Auto: cp.Auto, Time: time.UnixMilli(cp.TimeMillis).UTC().Format(time.RFC3339)}, Changes: []sinceChangeJSON{}, Secrets: uses, Requests: requests}
		for _, c := range changes {
			j.Changes = append(j.Changes, sinceChangeJSON{Path: c.Path, Kind: c.Kind})
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(j)
	case opts.Patch:
		for _, c := range changes {
			d, err := sess.DiffSince(ctx, since, c)
			if err != nil {
				return err
			}
			if _, err := io.WriteString(out, d); err != nil {
				return err
			}
		}
		return nil
	}
	for _, l := range review.SecretsLines(uses, requests) {
		fmt.Fprintln(out, l)
	}
	label := ""
	if cp.Label != "" {
		label = " (" + termsafe.String(cp.Label) + ")"
	}
	fmt.Fprintf(out, "%s in the guest copy since checkpoint %s%s, taken %s:\n", words.Count(len(changes), "change"), termsafe.String(cp.ID), label, time.UnixMilli(cp.TimeMillis).Local().Format("2006-01-02 15:04:05"))
	for _, c := range changes {
		fmt.Fprintf(out, "  %-15s %s\n", c.Kind, termsafe.Path(string(c.Path)))
	}
	return nil
}
