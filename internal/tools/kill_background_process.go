package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

var killBackgroundProcessTool = &mcp.Tool{
	Name:  "kill_background_process",
	Title: "Stop a background process",
	Description: `Sends a signal (default TERM) to a background process's whole process group; when TERM,
INT, HUP or QUIT does not end it within grace_seconds (default 5), KILL follows. Returns how it ended.`,
	Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)},
}

// signalsAllowed are the signals kill_background_process sends.
var signalsAllowed = []string{"TERM", "KILL", "INT", "HUP", "QUIT", "USR1", "USR2", "STOP", "CONT"}

// KillBackgroundProcessParams is the input of kill_background_process.
type KillBackgroundProcessParams struct {
	ID           int    `json:"id" jsonschema:"the background_id run_shell_command returned"`
	Signal       string `json:"signal,omitempty" jsonschema:"TERM (default), KILL, INT, HUP, QUIT, USR1, USR2, STOP or CONT"`
	GraceSeconds *int   `json:"grace_seconds,omitempty" jsonschema:"after TERM, INT, HUP or QUIT: seconds to wait before KILL (default 5, 0 to 60)"`
}

// KillBackgroundProcessResult is the output of kill_background_process.
type KillBackgroundProcessResult struct {
	SignalSent string `json:"signal_sent" jsonschema:"the signal sent"`
	Killed     bool   `json:"killed,omitempty" jsonschema:"true when KILL followed because it outlived the grace period"`
	BackgroundStatus
}

// KillBackgroundProcess signals a background process.
func (ts *Toolset) KillBackgroundProcess(ctx context.Context, req *mcp.CallToolRequest, args KillBackgroundProcessParams) (*mcp.CallToolResult, *KillBackgroundProcessResult, error) {
	e, b, err := ts.background(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	sig := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(args.Signal)), "SIG")
	if sig == "" {
		sig = "TERM"
	}
	if !slices.Contains(signalsAllowed, sig) {
		return nil, nil, fmt.Errorf("signal %q is not one of %s", args.Signal, strings.Join(signalsAllowed, ", "))
	}
	grace := 5
	if args.GraceSeconds != nil {
		if *args.GraceSeconds < 0 || *args.GraceSeconds > 60 {
			return nil, nil, fmt.Errorf("grace_seconds must be between 0 and 60, got %d", *args.GraceSeconds)
		}
		grace = *args.GraceSeconds
	}
	r, err := e.SignalBackground(ctx, runnerproto.BgSignalRequest{Group: b.group(), ID: args.ID, Signal: "SIG" + sig, GraceMillis: (time.Duration(grace) * time.Second).Milliseconds(), Output: b.output()})
	if err != nil {
		return nil, nil, bgError(err)
	}
	st := backgroundStatus(r.Status)
	switch {
	case r.Unknown:
		return nil, nil, unknownBackground(args.ID)
	case r.AlreadyEnded && st.Lost:
		return nil, nil, fmt.Errorf("background process %d cannot be signalled: its supervisor in the guest is gone (it was killed), so its state is unknown; nothing was sent. If it still runs, find it with run_shell_command (ps) and kill it there", args.ID)
	case r.AlreadyEnded:
		return nil, nil, fmt.Errorf("background process %d had already ended (%s); nothing was sent. read_background_output {\"id\": %d} shows its output", args.ID, endedHow(st), args.ID)
	}
	st.Ports = b.seen(e, []runnerproto.BgStatus{r.Status}, false)[args.ID]
	return nil, &KillBackgroundProcessResult{SignalSent: "SIG" + sig, Killed: r.Killed, BackgroundStatus: st}, nil
}

func endedHow(st BackgroundStatus) string {
	if st.Signal != "" {
		return "killed by " + st.Signal
	}
	if st.ExitCode != nil {
		return fmt.Sprintf("exit code %d", *st.ExitCode)
	}
	return "ended"
}
