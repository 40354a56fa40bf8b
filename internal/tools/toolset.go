// Package tools holds the MCP tool handlers: the "MCP Sandbox Interface" of Lima's bundled
// server (same names, fields and result shapes) and more. Handlers are thin: they check their
// arguments, call the session's environment (env.Env: host paths in and out, the workspace
// mapping and the guest connection behind it) and word its answers for the agent.
package tools

import (
	"context"
	"fmt"
	"runtime"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/tools/env"
	"github.com/limactl-mcp/limactl-mcp/internal/version"
	"github.com/limactl-mcp/limactl-mcp/internal/workspace"
)

// Toolset is the set of tools over one guest connection and one workspace.
type Toolset struct {
	g       *env.Guest // no tool holds the connection: each call's env.Env does
	src     WorkspaceSource
	lim     Limits
	pending PendingSource
	bg      *Background // nil: no background processes
}

// WorkspaceSource gives the workspace a call works in. A staged session's source waits until
// the working directory is staged (reporting progress to the request), and fails when
// staging failed.
type WorkspaceSource interface {
	Workspace(ctx context.Context, req *mcp.CallToolRequest) (*workspace.Workspace, error)
}

// Static is a WorkspaceSource that is always ready.
type Static struct{ WS *workspace.Workspace }

// Workspace implements WorkspaceSource.
func (s Static) Workspace(context.Context, *mcp.CallToolRequest) (*workspace.Workspace, error) {
	return s.WS, nil
}

// env is the environment of a call: the guest through the workspace the call works in.
func (ts *Toolset) env(ctx context.Context, req *mcp.CallToolRequest) (*env.Env, error) {
	ws, err := ts.src.Workspace(ctx, req)
	if err != nil {
		return nil, err
	}
	return ts.g.In(ws), nil
}

// Limits bound what tools accept and return.
type Limits struct {
	ReadBytes      int // bytes read_file returns at most (text)
	ReadLines      int // default line limit of read_file
	ImageBytes     int // largest image returned as image content
	WriteBytes     int // largest content write_file and replace accept
	OutputHead     int // bytes kept of the beginning of each command output stream
	OutputTail     int // bytes kept of the end of each command output stream
	GlobMatches    int // matches glob returns at most
	SearchBytes    int // bytes of search output at most
	DefaultTimeout int // seconds
	MaxTimeout     int // seconds
}

// DefaultLimits are the limits used by `serve`.
var DefaultLimits = Limits{
	ReadBytes:      256 << 10,
	ReadLines:      2000,
	ImageBytes:     4 << 20,
	WriteBytes:     10 << 20, // below the 16 MiB the go-sdk's stdio transport accepts in one message
	OutputHead:     48 << 10,
	OutputTail:     16 << 10,
	GlobMatches:    5000,
	SearchBytes:    256 << 10,
	DefaultTimeout: 120,
	MaxTimeout:     3600,
}

// New returns the tools over conn; a nil conn is allowed for listing the tools only.
// pending, when not nil, serves the pending_changes tool (a staged session).
func New(conn *guest.Conn, src WorkspaceSource, lim Limits, pending PendingSource) *Toolset {
	return &Toolset{g: env.NewGuest(conn), src: src, lim: lim, pending: pending}
}

// WithBackground gives the tools background processes (run_shell_command's background, and
// the tools that read, list and kill them).
func (ts *Toolset) WithBackground(b *Background) *Toolset {
	ts.bg = b
	return ts
}

// Register adds every tool to server.
func (ts *Toolset) Register(server *mcp.Server) {
	specs := argSpecs{}
	add(server, specs, listDirectoryTool, ts.ListDirectory)
	add(server, specs, readFileTool, ts.ReadFile)
	add(server, specs, writeFileTool, ts.WriteFile)
	add(server, specs, replaceTool, ts.Replace)
	add(server, specs, globTool, ts.Glob)
	add(server, specs, searchFileContentTool, ts.SearchFileContent)
	add(server, specs, runShellCommandTool, ts.RunShellCommand)
	add(server, specs, pendingChangesTool, ts.PendingChanges)
	add(server, specs, readBackgroundOutputTool, ts.ReadBackgroundOutput)
	add(server, specs, listBackgroundProcessesTool, ts.ListBackgroundProcesses)
	add(server, specs, killBackgroundProcessTool, ts.KillBackgroundProcess)
	add(server, specs, checkpointTool, ts.Checkpoint)
	add(server, specs, listCheckpointsTool, ts.ListCheckpoints)
	add(server, specs, restoreCheckpointTool, ts.RestoreCheckpoint)
	server.AddReceivingMiddleware(argHints(specs))
}

// NewServer returns an MCP server with the name Lima's bundled server has ("lima"), so that
// clients configured for it keep working.
func NewServer(extraInstructions string) *mcp.Server {
	impl := &mcp.Implementation{
		Name:    "lima",
		Title:   "Lima VM sandbox (limactl-mcp): file and shell tools that run inside a Lima VM",
		Version: version.Version,
	}
	instr := `This MCP server provides tools for sandboxing local command executions and file I/O operations,
by wrapping them in a Lima VM (https://lima-vm.io).

Use these tools instead of your built-in file and shell tools, so that commands never run on the host.
All paths are absolute. Commands run in the guest (Linux), with the guest user's login environment.`
	if runtime.GOOS != "linux" {
		instr += fmt.Sprintf("\n\nNOTE: the guest OS of the VM is Linux, while the host OS is %s.", strings.ToUpper(runtime.GOOS[:1])+runtime.GOOS[1:])
	}
	if extraInstructions != "" {
		instr += "\n\n" + extraInstructions
	}
	return mcp.NewServer(impl, &mcp.ServerOptions{Instructions: instr})
}

func ptr[T any](v T) *T { return &v }

var readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}

// Unavailable is a WorkspaceSource (and PendingSource) for a server that cannot reach its
// instance at all (it does not exist): every call answers with Err, which says what to do.
type Unavailable struct{ Err error }

// Workspace implements WorkspaceSource.
func (u Unavailable) Workspace(context.Context, *mcp.CallToolRequest) (*workspace.Workspace, error) {
	return nil, u.Err
}

// GuestChanges implements PendingSource.
func (u Unavailable) GuestChanges(context.Context) (*staging.ChangeSet, error) { return nil, u.Err }

// PendingDiff implements PendingSource.
func (u Unavailable) PendingDiff(context.Context, string) (string, error) { return "", u.Err }
