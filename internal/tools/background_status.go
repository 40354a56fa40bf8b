package tools

import (
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// BackgroundStatus is what the tools say about one background process.
type BackgroundStatus struct {
	ID          int    `json:"id" jsonschema:"the background process's id"`
	Command     string `json:"command" jsonschema:"the command, as a shell would read it"`
	Directory   string `json:"directory" jsonschema:"the directory it runs in"`
	PID         int    `json:"pid" jsonschema:"its process id in the guest (its process group's too)"`
	Started     string `json:"started" jsonschema:"when it started (RFC 3339)"`
	Running     bool   `json:"running" jsonschema:"true while the command has not exited"`
	ExitCode    *int   `json:"exit_code,omitempty" jsonschema:"its exit code, once it exited (not when a signal killed it)"`
	Signal      string `json:"signal,omitempty" jsonschema:"the signal that killed it, if any (e.g. SIGTERM)"`
	Lost        bool   `json:"lost,omitempty" jsonschema:"true when its supervisor in the guest was killed: its state is unknown and its output no longer collected"`
	OutputBytes int64  `json:"output_bytes" jsonschema:"bytes of output (stdout and stderr together) it wrote so far"`
	// Ports are the TCP ports it (or a process it started) listens on, with their host URLs.
	Ports []PortStatus `json:"ports,omitempty" jsonschema:"the TCP ports it (or what it started) listens on in the guest, each with the URL that reaches it from the host: give the person that URL to see a dev server"`
}

// backgroundStatus shapes a status from the guest (checked: guest/runnerclient/background.go) for
// the agent, with guest paths as the agent's.
// backgroundStatus is s for the agent (its directory a host path: env.Env's results).
func backgroundStatus(s runnerproto.BgStatus) BackgroundStatus {
	out := BackgroundStatus{
		ID:          s.ID,
		Command:     shellquote.JoinCommand(s.Argv),
		Directory:   s.Dir,
		PID:         s.PID,
		Started:     time.UnixMilli(s.Started).UTC().Format(time.RFC3339),
		Running:     s.Running,
		Signal:      s.Signal,
		Lost:        s.Lost,
		OutputBytes: s.OutputBytes,
	}
	if !s.Running && !s.Lost && s.Signal == "" {
		out.ExitCode = ptr(s.ExitCode)
	}
	return out
}
