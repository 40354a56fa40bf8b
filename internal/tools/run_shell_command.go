package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/tools/env"
)

var runShellCommandTool = &mcp.Tool{
	Name:  "run_shell_command",
	Title: "Run a command",
	Description: `Executes a given shell command.
The command runs in the guest (Linux) as the guest user, with the login environment (PATH from the
profile), in the given directory, with no standard input. It is killed, with its whole process group,
after timeout_seconds (default 120). Long output is cut in the middle; the result says how much.
With background: true it returns at once with a background_id and pid, and the command runs on (a dev
server, a watcher, a long build): read its output with read_background_output, see what runs with
list_background_processes, stop it with kill_background_process. Background processes end with this
server.`,
	Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
}

// RunShellCommandParams is the input of run_shell_command: Lima's, plus a timeout.
type RunShellCommandParams struct {
	Command        []string `json:"command" jsonschema:"The exact shell command to execute. Defined as a string slice, unlike Gemini's run_shell_command that defines it as a single string."`
	Description    string   `json:"description,omitempty" jsonschema:"A brief description of the command's purpose, which will be potentially shown to the user."`
	Directory      string   `json:"directory" jsonschema:"The absolute directory in which to execute the command. Unlike Gemini's run_shell_command, this must not be a relative path, and must not be empty."`
	TimeoutSeconds *int     `json:"timeout_seconds,omitempty" jsonschema:"Kill the command (and its process group) after this many seconds. Default 120, at most 3600."`
	Background     *bool    `json:"background,omitempty" jsonschema:"Start the command in the background and return at once with its background_id and pid; it runs on (no timeout) until kill_background_process or the end of this server. Its output (stdout and stderr together) is read with read_background_output."`
}

// RunShellCommandResult is the output of run_shell_command: Lima's, plus how it ended.
type RunShellCommandResult struct {
	Stdout   string `json:"stdout" jsonschema:"Output from the standard output stream."`
	Stderr   string `json:"stderr" jsonschema:"Output from the standard error stream."`
	Error    string `json:"error,omitempty" jsonschema:"Any error message reported by the subprocess."`
	ExitCode *int   `json:"exit_code,omitempty" jsonschema:"Exit code of the command."`
	Signal   string `json:"signal,omitempty" jsonschema:"The signal that killed the command, if any (e.g. SIGKILL)."`
	TimedOut bool   `json:"timed_out,omitempty" jsonschema:"true when the timeout expired and the command was killed"`
	// StdoutCutBytes and StderrCutBytes count the bytes cut from the middle of long output.
	StdoutCutBytes int64 `json:"stdout_cut_bytes,omitempty" jsonschema:"bytes of stdout cut from the middle (not returned)"`
	StderrCutBytes int64 `json:"stderr_cut_bytes,omitempty" jsonschema:"bytes of stderr cut from the middle (not returned)"`
	// Note says when output may be missing: processes the command left running held it.
	Note string `json:"note,omitempty" jsonschema:"set when some output may be missing, and why"`
	// NetworkHeld names the connections the network policy held for the person to decide on
	// while the command ran (the agent was told as it waited: held_notice.go).
	NetworkHeld string `json:"network_held,omitempty" jsonschema:"under a network policy, while a person watches the agent: the connections of the command that were held for them to decide on (allow or deny), which is why it waited"`
	// BackgroundID and PID are set for a command started in the background.
	BackgroundID *int `json:"background_id,omitempty" jsonschema:"for a command started in the background: its id, for read_background_output and kill_background_process"`
	PID          *int `json:"pid,omitempty" jsonschema:"for a command started in the background: its process id in the guest (its process group's too)"`
	// Ports are those a background command listened on within a moment of its start.
	Ports []PortStatus `json:"ports,omitempty" jsonschema:"for a command started in the background: the TCP ports it listened on within a moment of its start, each with the URL that reaches it from the host (read_background_output reports ports opened later)"`
}

// RunShellCommand runs a command in the guest.
func (ts *Toolset) RunShellCommand(ctx context.Context, req *mcp.CallToolRequest, args RunShellCommandParams) (*mcp.CallToolResult, *RunShellCommandResult, error) {
	ctx = withProgress(ctx) // staging's progress, then a held connection's
	e, err := ts.env(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if len(args.Command) == 0 || args.Command[0] == "" {
		return nil, nil, errors.New(`command is empty: pass the program and its arguments, e.g. ["ls", "-la"] or ["bash", "-c", "make && make test"]`)
	}
	if args.Directory == "" {
		return nil, nil, fmt.Errorf("directory is empty: pass the absolute directory to run the command in, such as %q", e.DefaultDir())
	}
	if err := e.Check(args.Directory); err != nil {
		return nil, nil, err
	}
	if args.Background != nil && *args.Background {
		return ts.startBackground(ctx, e, args)
	}
	timeout := ts.lim.DefaultTimeout
	if args.TimeoutSeconds != nil {
		timeout = *args.TimeoutSeconds
		if timeout < 1 || timeout > ts.lim.MaxTimeout {
			return nil, nil, fmt.Errorf("timeout_seconds must be between 1 and %d, got %d", ts.lim.MaxTimeout, timeout)
		}
	}
	start := time.Now()
	held := ts.watchHeld(ctx, req)
	r, err := e.Run(ctx, env.RunRequest{
		Argv:      args.Command,
		Dir:       args.Directory,
		Timeout:   time.Duration(timeout) * time.Second,
		HeadBytes: ts.lim.OutputHead,
		TailBytes: ts.lim.OutputTail,
	})
	heldLine := held()
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("the call was cancelled; the command's process group was killed")
		}
		return nil, nil, err
	}
	res := &RunShellCommandResult{Signal: r.Signal, TimedOut: r.TimedOut, Stdout: r.Stdout, Stderr: r.Stderr, StdoutCutBytes: r.StdoutCutBytes, StderrCutBytes: r.StderrCutBytes, NetworkHeld: heldLine}
	if r.Signal == "" {
		res.ExitCode = ptr(r.ExitCode)
	}
	if len(r.HeldBy) > 0 {
		res.Note = fmt.Sprintf("the command left processes running that still held its output when it ended (%s): what they print from now on is not collected. Send a background job's output to a file (cmd > /tmp/job.log 2>&1 &) and read that file.", strings.Join(r.HeldBy, ", "))
	}
	switch {
	case r.TimedOut:
		res.Error = fmt.Sprintf("timed out after %ds: the command and its process group were killed (%s). Pass a larger timeout_seconds, or run long jobs in the background with their output sent to a file", timeout, r.Signal)
	case r.Signal != "":
		res.Error = "signal: " + strings.TrimPrefix(r.Signal, "SIG") + " (the command was killed by " + r.Signal + ")"
	case r.DirMissing:
		res.Error = fmt.Sprintf("directory %s does not exist in the guest: create it first, or run the command in an existing directory", args.Directory)
	case r.ExitCode != 0:
		res.Error = fmt.Sprintf("exit status %d", r.ExitCode)
	}
	if res.Error != "" {
		// A failure under a network policy may be the policy's doing: say so (a log read,
		// only for failed commands of a session under a policy).
		if note := ts.networkNote(ctx, start); note != "" {
			res.Error += "; " + note
		}
	}
	return nil, res, nil
}
