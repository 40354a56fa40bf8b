// Package timeline is a session's record of what the agent (and the person) did: every MCP
// tool call, every `limactl mcp shell` command, background starts and ends, checkpoints and
// restores, syncs, review applies and undos. It is one append-only JSONL file per session in
// the session's host state (timeline.jsonl), capped and rotated, with totals kept for what the
// rotation drops (as the guest keeps for its network log). Arguments are summarised (file
// contents and large values become their size and hash) and known secret values are redacted
// before anything is written; the environment is never recorded. See docs/log.md.
//
// Every event is written whole by one write(2) on a file opened O_APPEND when its call ends:
// a process killed at any point leaves every completed event readable, and several processes
// (serve, shell, review) append to one timeline without mixing their lines.
package timeline

import (
	"time"
)

// Kind is what an event records.
type Kind string

// The kinds of event.
const (
	// Call is an MCP tool call of serve (checkpoint and restore_checkpoint included).
	Call Kind = "call"
	// Command is a command run by `limactl mcp shell`.
	Command Kind = "command"
	// BackgroundStart is a background process started by run_shell_command (besides its call).
	BackgroundStart Kind = "background_start"
	// BackgroundExit is a background process seen to have ended: killed by the agent, or by
	// the end of its server.
	BackgroundExit Kind = "background_exit"
	// Checkpoint is a checkpoint taken by a person's command (the agent's is a Call).
	Checkpoint Kind = "checkpoint"
	// Restore is a checkpoint restored by `limactl mcp restore`.
	Restore Kind = "restore"
	// Sync is `limactl mcp sync`: host edits brought into the guest copy.
	Sync Kind = "sync"
	// Apply and Undo are a review's apply to the host and its undo.
	Apply Kind = "apply"
	Undo  Kind = "undo"
	// ServeStart and ServeEnd bracket a server's life (a server killed leaves no end).
	ServeStart Kind = "serve_start"
	ServeEnd   Kind = "serve_end"
	// Network is the agent's connections to one host and port with one verdict, from the
	// guest's network record (network.go): Count attempts from Time to Last.
	Network Kind = "network"
)

// Event is one line of the timeline (the JSON schema is in docs/log.md).
type Event struct {
	// Time is when the event began (a call's start), UTC.
	Time time.Time `json:"t"`
	Kind Kind      `json:"kind"`
	// Source is the command that recorded it: serve, shell, review, restore, sync.
	Source string `json:"source,omitempty"`
	// PID is the recording process's (the events of one server share it).
	PID int `json:"pid,omitempty"`
	// Tool is the MCP tool of a call.
	Tool string `json:"tool,omitempty"`
	// Args are the call's arguments, summarised (see Summarise) and redacted.
	Args map[string]any `json:"args,omitempty"`
	// Command is the shell command (run_shell_command's, shell's), shell-quoted, redacted.
	Command string `json:"command,omitempty"`
	// Dir is the directory the command ran in.
	Dir string `json:"dir,omitempty"`
	// Paths are the paths the event names, relative to the session's working directory when
	// inside it (a file tool's path; the paths an apply wrote).
	Paths []string `json:"paths,omitempty"`
	// DurationMS is how long it took, in milliseconds.
	DurationMS float64 `json:"duration_ms,omitempty"`
	// ResultBytes is the size of the call's result as the client received it (JSON).
	ResultBytes int `json:"result_bytes,omitempty"`
	// Exit is a command's exit code.
	Exit *int `json:"exit,omitempty"`
	// Signal is the signal that ended a command.
	Signal string `json:"signal,omitempty"`
	// Error is the call's error (a tool error's text, capped), redacted.
	Error string `json:"error,omitempty"`
	// Background is a background process's id (run_shell_command's background_id).
	Background int `json:"background_id,omitempty"`
	// Checkpoint is the checkpoint taken or restored.
	Checkpoint string `json:"checkpoint,omitempty"`
	// Count is how many paths an apply, undo, restore or sync changed; for a network event,
	// its attempts.
	Count int `json:"count,omitempty"`
	// Note says more, in words (an interrupted call, a cut argument, why a connection was
	// refused).
	Note string `json:"note,omitempty"`

	// Host, Port, Verdict (allowed or blocked) and Via (proxy or direct) are a network
	// event's destination and what the policy did; Last is the time of its last attempt, and
	// BytesUp and BytesDown what its allowed connections sent and received. Count is then its
	// attempts.
	Host      string    `json:"host,omitempty"`
	Port      int       `json:"port,omitempty"`
	Verdict   string    `json:"verdict,omitempty"`
	Via       string    `json:"via,omitempty"`
	Last      time.Time `json:"last,omitzero"`
	BytesUp   int64     `json:"bytes_up,omitempty"`
	BytesDown int64     `json:"bytes_down,omitempty"`
}

// End is when the event ended (its start plus its duration).
func (e *Event) End() time.Time {
	return e.Time.Add(time.Duration(e.DurationMS * float64(time.Millisecond)))
}

// Failed says the event is a failure: an error, or a command that exited non-zero or by a
// signal.
func (e *Event) Failed() bool {
	return e.Error != "" || (e.Exit != nil && *e.Exit != 0) || e.Signal != ""
}

// IsCommand says the event ran a shell command: a run_shell_command call or a shell command.
func (e *Event) IsCommand() bool {
	return e.Kind == Command || (e.Kind == Call && e.Tool == "run_shell_command")
}

// Counts are a timeline's totals.
type Counts struct {
	Events int `json:"events"`
	// Calls are the MCP tool calls; Commands the shell commands (run_shell_command calls and
	// `limactl mcp shell` commands).
	Calls    int `json:"calls"`
	Commands int `json:"commands"`
	Failures int `json:"failures"`
	// BusyMS is the time spent in calls and commands, in milliseconds (concurrent calls count
	// each).
	BusyMS float64 `json:"busy_ms"`
	// First and Last are the times of the first and last event.
	First time.Time `json:"first,omitzero"`
	Last  time.Time `json:"last,omitzero"`
	// NetAllowed and NetBlocked are the network attempts recorded (network events' counts).
	NetAllowed int `json:"network_allowed,omitempty"`
	NetBlocked int `json:"network_blocked,omitempty"`
}

// Add counts e.
func (c *Counts) Add(e *Event) {
	c.Events++
	if e.Kind == Call {
		c.Calls++
	}
	if e.IsCommand() {
		c.Commands++
	}
	if (e.Kind == Call || e.Kind == Command) && e.Failed() {
		c.Failures++
	}
	if e.Kind == Call || e.Kind == Command {
		c.BusyMS += e.DurationMS
	}
	if e.Kind == Network {
		switch e.Verdict {
		case "allowed":
			c.NetAllowed += max(e.Count, 1)
		case "blocked":
			c.NetBlocked += max(e.Count, 1)
		}
	}
	if c.First.IsZero() || e.Time.Before(c.First) {
		c.First = e.Time
	}
	if e.Time.After(c.Last) {
		c.Last = e.Time
	}
}

// Merge adds o to c.
func (c *Counts) Merge(o Counts) {
	c.Events += o.Events
	c.Calls += o.Calls
	c.Commands += o.Commands
	c.Failures += o.Failures
	c.BusyMS += o.BusyMS
	c.NetAllowed += o.NetAllowed
	c.NetBlocked += o.NetBlocked
	if !o.First.IsZero() && (c.First.IsZero() || o.First.Before(c.First)) {
		c.First = o.First
	}
	if o.Last.After(c.Last) {
		c.Last = o.Last
	}
}
