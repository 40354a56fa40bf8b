package tools

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

var listBackgroundProcessesTool = &mcp.Tool{
	Name:  "list_background_processes",
	Title: "List background processes",
	Description: `Lists the processes this server started in the background (run_shell_command with
background: true), running or ended: id, command, pid, start, whether it runs or how it ended, how
much output it wrote, and the TCP ports it listens on, each with the URL that reaches it from the
person's machine (host_url: give them that URL to see a dev server).`,
	Annotations: readOnly,
}

// ListBackgroundProcessesParams is the input of list_background_processes (none).
type ListBackgroundProcessesParams struct{}

// ListBackgroundProcessesResult is the output of list_background_processes.
type ListBackgroundProcessesResult struct {
	Processes []BackgroundStatus `json:"processes" jsonschema:"the background processes, by id"`
}

// ListBackgroundProcesses lists this server's background processes.
func (ts *Toolset) ListBackgroundProcesses(ctx context.Context, req *mcp.CallToolRequest, _ ListBackgroundProcessesParams) (*mcp.CallToolResult, *ListBackgroundProcessesResult, error) {
	e, b, err := ts.background(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	res := &ListBackgroundProcessesResult{Processes: []BackgroundStatus{}}
	b.mu.Lock()
	started := b.started
	b.mu.Unlock()
	if !started {
		return nil, res, nil // nothing to ask the guest
	}
	r, err := e.ListBackground(ctx, runnerproto.BgListRequest{Group: b.group(), Max: b.lim.MaxKept, Output: b.output()})
	if err != nil {
		return nil, nil, bgError(err)
	}
	ports := b.seen(e, r.Processes, !r.Truncated)
	for _, s := range r.Processes {
		st := backgroundStatus(s)
		st.Ports = ports[s.ID]
		res.Processes = append(res.Processes, st)
	}
	return nil, res, nil
}
