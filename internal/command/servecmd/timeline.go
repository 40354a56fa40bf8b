package servecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
	"github.com/limactl-mcp/limactl-mcp/internal/tools"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// openTimeline is the timeline of the session in dir (its host state directory), written by
// this server; the values of the host's secret-looking environment variables and the session's
// secrets (secrets, however they were read) are redacted.
func openTimeline(dir string, log *slog.Logger, secrets ...string) *timeline.Log {
	tl := timeline.Open(dir, "serve", timeline.FromEnviron(os.Environ(), secrets...))
	tl.OnError = func(err error) {
		log.Warn("cannot write the session's timeline (limactl mcp log)", "error", err)
	}
	return tl
}

// recorder records every tool call of a server in its session's timeline (see
// internal/timeline): the tool, its arguments summarised and redacted, when it started, how
// long it took, the size of its result, and its exit code or error. A call is written when it
// ends, in one write: a server killed keeps every call it completed.
type recorder struct {
	tl *timeline.Log
	// workdir and shown are the session's working directory and the one the agent was
	// started in (a symbolic link to it, or the same): paths under either are recorded
	// relative to it.
	workdir, shown string

	// net copies the guest's network record into the timeline (nil: the session is open, no
	// record); a call that ran a command pokes it.
	net *netRecorder

	mu      sync.Mutex
	exited  map[int]bool // background processes whose end was recorded
	started int          // background processes started (their start recorded)
}

// backgroundMayRun says whether a background process this server started may still run (its
// end not seen): the network record is then looked at now and then without a call.
func (r *recorder) backgroundMayRun() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started > len(r.exited)
}

func newRecorder(tl *timeline.Log, workdir, shown string) *recorder {
	return &recorder{tl: tl, workdir: workdir, shown: shown, exited: map[int]bool{}}
}

// middleware is the go-sdk middleware that records tools/call.
func (r *recorder) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		start := time.Now()
		res, err := next(ctx, method, req)
		r.record(req, res, err, start, time.Since(start))
		return res, err
	}
}

// pathArgs are the arguments that name a path.
var pathArgs = []string{"path", "file_path", "dir_path"}

func (r *recorder) record(req mcp.Request, res mcp.Result, err error, start time.Time, took time.Duration) {
	ctr, ok := req.(*mcp.CallToolRequest)
	if !ok || ctr.Params == nil {
		return
	}
	p := ctr.Params
	e := timeline.Event{
		Time:       start,
		Kind:       timeline.Call,
		Tool:       p.Name,
		Args:       timeline.Summarise(p.Arguments, r.tl.Redactor()),
		DurationMS: float64(took.Microseconds()) / 1000,
	}
	for _, k := range pathArgs {
		if s, ok := e.Args[k].(string); ok && s != "" {
			e.Paths = append(e.Paths, r.rel(s))
		}
	}
	if dir, ok := e.Args["directory"].(string); ok {
		e.Dir = dir
	}
	if words, ok := e.Args["command"].([]any); ok {
		var ws []string
		for _, w := range words {
			if s, ok := w.(string); ok {
				ws = append(ws, s)
			}
		}
		e.Command = shellquote.JoinCommand(ws)
		delete(e.Args, "command") // once is enough
	}
	if err != nil {
		e.Error = err.Error()
	}
	var more []timeline.Event
	if ctres, ok := res.(*mcp.CallToolResult); ok && ctres != nil {
		e.ResultBytes = contentBytes(ctres.Content)
		if ctres.IsError {
			e.Error = firstText(ctres.Content)
			if e.Error == "" {
				e.Error = "error"
			}
		}
		more = r.fromResult(&e, structured(p.Name, ctres.StructuredContent))
	}
	r.tl.Record(e)
	for _, m := range more {
		r.tl.Record(m)
	}
	if p.Name == "run_shell_command" || p.Name == "kill_background_process" {
		r.net.Poke()
	}
}

// fromResult reads what the timeline keeps from a tool's structured result: an exit code, a
// background process started or seen ended, a checkpoint's id. It returns the events to
// record after the call's.
func (r *recorder) fromResult(e *timeline.Event, out any) []timeline.Event {
	var more []timeline.Event
	switch v := out.(type) {
	case *tools.RunShellCommandResult:
		if v == nil {
			break
		}
		e.Exit, e.Signal = v.ExitCode, v.Signal
		if v.TimedOut {
			e.Note = "timed out"
		}
		if v.BackgroundID != nil {
			e.Background = *v.BackgroundID
			more = append(more, timeline.Event{Time: e.Time, Kind: timeline.BackgroundStart, Tool: e.Tool, Command: e.Command, Dir: e.Dir, Background: *v.BackgroundID})
			r.mu.Lock()
			r.started++
			r.mu.Unlock()
		}
	case *tools.CheckpointResult:
		if v != nil {
			e.Checkpoint = strconv.Itoa(v.ID)
		}
	case *tools.RestoreCheckpointResult:
		if v != nil {
			e.Checkpoint, e.Count = strconv.Itoa(v.ID), v.Total
		}
	case *tools.KillBackgroundProcessResult:
		if id, ok := e.Args["id"].(float64); ok && e.Error == "" {
			more = append(more, r.exit(int(id), nil, v.SignalSent))
		}
	case *tools.ListBackgroundProcessesResult:
		if v == nil {
			break
		}
		for _, p := range v.Processes {
			if !p.Running {
				more = append(more, r.exit(p.ID, p.ExitCode, p.Signal))
			}
		}
	}
	var out2 []timeline.Event
	for _, m := range more {
		if m.Kind != "" {
			out2 = append(out2, m)
		}
	}
	return out2
}

// structured is a tool's structured result as its type, for the tools whose result the
// timeline reads (nil for the others). The go-sdk hands it on as the JSON it sends; decoding
// it again costs little next to the call (docs/benchmarks.md).
func structured(tool string, out any) any {
	var v any
	switch tool {
	case "run_shell_command":
		v = &tools.RunShellCommandResult{}
	case "checkpoint":
		v = &tools.CheckpointResult{}
	case "restore_checkpoint":
		v = &tools.RestoreCheckpointResult{}
	case "kill_background_process":
		v = &tools.KillBackgroundProcessResult{}
	case "list_background_processes":
		v = &tools.ListBackgroundProcessesResult{}
	default:
		return nil
	}
	var raw []byte
	switch o := out.(type) {
	case json.RawMessage:
		raw = o
	case []byte:
		raw = o
	default:
		return out // already typed
	}
	if tool == "run_shell_command" {
		// Its output is most of it: only the small fields after it are read (shellFields).
		return shellFields(raw)
	}
	if json.Unmarshal(raw, v) != nil {
		return nil
	}
	return v
}

// shellFields reads the fields the timeline keeps of a run_shell_command result without
// decoding its output (tens of kB: the larger part of recording's cost when decoded). A key
// is found as `"name":`, which can only be a key: inside a JSON string every quote is
// escaped (\"), so the text of the output cannot hold that sequence. The result is a
// flat object (tools.RunShellCommandResult), so each key is a top-level one.
func shellFields(raw []byte) *tools.RunShellCommandResult {
	r := &tools.RunShellCommandResult{}
	value := func(key string, dst any) {
		i := bytes.Index(raw, []byte(`"`+key+`":`))
		if i < 0 {
			return
		}
		_ = json.NewDecoder(bytes.NewReader(raw[i+len(key)+3:])).Decode(dst)
	}
	value("exit_code", &r.ExitCode)
	value("signal", &r.Signal)
	value("timed_out", &r.TimedOut)
	value("background_id", &r.BackgroundID)
	return r
}

// exit is the event of background process id seen ended (once per process; a zero event
// after that).
func (r *recorder) exit(id int, code *int, signal string) timeline.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.exited[id] {
		return timeline.Event{}
	}
	r.exited[id] = true
	return timeline.Event{Kind: timeline.BackgroundExit, Background: id, Exit: code, Signal: signal, Note: "seen ended (it ended at or before this time)"}
}

// rel is p relative to the working directory when inside it (as review names paths).
func (r *recorder) rel(p string) string {
	for _, base := range []string{r.workdir, r.shown} {
		if base == "" || !filepath.IsAbs(p) {
			continue
		}
		if rel, ok := tree.Inside(filepath.ToSlash(base), filepath.ToSlash(filepath.Clean(p))); ok {
			return rel
		}
	}
	return p
}

func contentBytes(cs []mcp.Content) int {
	n := 0
	for _, c := range cs {
		switch v := c.(type) {
		case *mcp.TextContent:
			n += len(v.Text)
		case *mcp.ImageContent:
			n += len(v.Data)
		case *mcp.AudioContent:
			n += len(v.Data)
		}
	}
	return n
}

func firstText(cs []mcp.Content) string {
	for _, c := range cs {
		if t, ok := c.(*mcp.TextContent); ok {
			return t.Text
		}
	}
	return ""
}
