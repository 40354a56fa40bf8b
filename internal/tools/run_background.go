package tools

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tools/env"
)

// startBackground is run_shell_command with background: true.
func (ts *Toolset) startBackground(ctx context.Context, e *env.Env, args RunShellCommandParams) (*mcp.CallToolResult, *RunShellCommandResult, error) {
	b := ts.bg
	if b == nil {
		return nil, nil, errNoBackground
	}
	b.reapOrphans(ctx)
	b.mu.Lock()
	b.started = true // from now on, End asks the guest (a start may succeed and its reply be lost)
	b.mu.Unlock()
	r, err := e.StartBackground(ctx, runnerproto.BgStartRequest{
		Group:      b.group(),
		Argv:       args.Command,
		Dir:        args.Directory,
		Output:     b.output(),
		MaxRunning: b.lim.MaxRunning,
		MaxKept:    b.lim.MaxKept,
	})
	if err != nil {
		return nil, nil, bgError(err)
	}
	switch {
	case r.TooMany:
		return nil, nil, fmt.Errorf("too many background processes: %d are running (or still hold their output), the most this server runs at once; stop one with kill_background_process (list_background_processes shows them) and start this one again", b.lim.MaxRunning)
	case r.DirMissing:
		return nil, nil, fmt.Errorf("directory %s does not exist in the guest: create it first, or run the command in an existing directory", args.Directory)
	case r.StartError != "":
		return nil, nil, fmt.Errorf("the command could not start in the background (exit status %d): %s", r.ExitCode, r.StartError)
	}
	res := &RunShellCommandResult{BackgroundID: ptr(r.ID), PID: ptr(r.PID)}
	res.Note = fmt.Sprintf("started in the background as id %d (pid %d); it runs on: read its output with read_background_output {\"id\": %d}, stop it with kill_background_process {\"id\": %d}", r.ID, r.PID, r.ID, r.ID)
	if args.TimeoutSeconds != nil {
		res.Note += "; timeout_seconds does not apply to a background process"
	}
	if res.Ports = b.waitListening(ctx, e, r.ID); len(res.Ports) > 0 {
		res.Note += "; it listens on " + portsText(res.Ports)
	}
	return nil, res, nil
}
