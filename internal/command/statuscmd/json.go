package statuscmd

import (
	"strconv"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
)

// JSON is the output of `status --json`, defined here only (staging.SessionStatus, what it is
// made from, has no JSON of its own); docs/status-json.md is its schema, and
// TestStatusJSONSchema keeps the two together.
type JSON struct {
	SchemaVersion int           `json:"schema_version"`
	Instance      string        `json:"instance"`
	Sessions      []SessionJSON `json:"sessions"`
}

// SessionJSON is a session in JSON.
type SessionJSON struct {
	Workdir string `json:"workdir"`
	// Session is the session's name, left out for the unnamed session.
	Session   string    `json:"session,omitempty"`
	GuestPath string    `json:"guest_path"`
	StagedAt  time.Time `json:"staged_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Files     int       `json:"files"`
	Bytes     int64     `json:"bytes"`
	// Pending is always an object ({} when nothing is pending or it could not be counted).
	Pending      map[staging.Kind]int `json:"pending"`
	PendingTotal int                  `json:"pending_total"`
	Error        string               `json:"error,omitempty"`
	// Network is the session's network policy and, under one, what the agent did.
	Network *staging.NetworkReport `json:"network"`
	// Checkpoints is always a list ([] when there are none or they could not be listed).
	Checkpoints      []CheckpointJSON `json:"checkpoints"`
	CheckpointBytes  int64            `json:"checkpoint_bytes"`
	CheckpointsError string           `json:"checkpoints_error,omitempty"`
	// Timeline is the session's timeline totals (limactl mcp log), left out when it has none.
	Timeline *timeline.Counts `json:"timeline,omitempty"`
	// Secrets are the lines of the session's log of secrets' uses (secrets.UsesSummary: "NAME
	// used N times, only with HOST"), left out when it used none.
	Secrets []string `json:"secrets,omitempty"`
	// Requests are the lines of the HTTPS requests the network rules ruled on
	// (secrets.Summaries: "github.com: 3 HTTPS requests allowed by the network rules, 1
	// refused (the last: POST /…)"), left out when there were none.
	Requests []string `json:"requests,omitempty"`
	// Fork is what the session was forked from (`limactl mcp fork`); left out for a session
	// staged from the host.
	Fork *staging.ForkOrigin `json:"fork,omitempty"`
}

// CheckpointJSON is a checkpoint in SessionJSON.
type CheckpointJSON struct {
	ID          int    `json:"id"`
	Label       string `json:"label,omitempty"`
	Auto        bool   `json:"auto,omitempty"`
	Time        string `json:"time"`
	Files       int    `json:"files"`
	Bytes       int64  `json:"bytes"`
	StoredBytes int64  `json:"stored_bytes"`
}

func toJSON(instance string, sts []staging.SessionStatus, tls []*timeline.Counts, secretsUses usesOf) JSON {
	out := JSON{SchemaVersion: 1, Instance: instance, Sessions: make([]SessionJSON, 0, len(sts))}
	for i, s := range sts {
		uses, requests := secretsUses(s)
		pending := s.Pending
		if pending == nil {
			pending = map[staging.Kind]int{}
		}
		cps := make([]CheckpointJSON, 0, len(s.Checkpoints))
		for _, c := range s.Checkpoints {
			id, _ := strconv.Atoi(c.ID) // checked: a number (guest/replies_checkpoint.go)
			cps = append(cps, CheckpointJSON{ID: id, Label: c.Label, Auto: c.Auto, Time: time.UnixMilli(c.TimeMillis).UTC().Format(time.RFC3339Nano),
				Files: c.Files, Bytes: c.Bytes, StoredBytes: c.Stored})
		}
		out.Sessions = append(out.Sessions, SessionJSON{
			Workdir: s.Workdir, Session: s.Session, GuestPath: s.GuestPath, StagedAt: s.StagedAt, UpdatedAt: s.UpdatedAt,
			Files: s.Files, Bytes: s.Bytes, Pending: pending, PendingTotal: s.PendingTotal, Error: s.Error, Network: s.Network,
			Checkpoints: cps, CheckpointBytes: s.CheckpointBytes, CheckpointsError: s.CheckpointsError, Timeline: tls[i], Secrets: uses, Requests: requests, Fork: s.Fork,
		})
	}
	return out
}
