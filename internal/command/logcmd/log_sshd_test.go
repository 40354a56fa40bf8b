package logcmd_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/logcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
)

func run(t *testing.T, f *sessiontest.Fixture, opts logcmd.Options) (string, error) {
	t.Helper()
	ios, _, out, _ := iostreams.Test()
	opts.IO, opts.Instance, opts.Open, opts.Workdir = ios, sessiontest.Instance, f.Opener(), f.Workdir
	err := logcmd.Run(context.Background(), &opts)
	return out.String(), err
}

// A session's timeline: readable lines with what each call did and the totals; --json the
// events; --since a checkpoint or a time; --commands the commands as a script; escapes.
func TestLog(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	if out, err := run(t, f, logcmd.Options{}); err != nil || !strings.Contains(out, "has no events recorded yet") {
		t.Errorf("an empty timeline: %v %q", err, out)
	}
	tl := timeline.Open(f.Store.SessionDir(staging.SessionID(f.Workdir)), "serve", nil)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	zero, two := 0, 2
	for _, e := range []timeline.Event{
		{Time: t0, Kind: timeline.ServeStart},
		{Time: t0.Add(time.Second), Kind: timeline.Call, Tool: "write_file", Paths: []string{"src/a.go"}, Args: map[string]any{"content": map[string]any{"bytes": 1840}}, DurationMS: 12, ResultBytes: 2},
		{Time: t0.Add(2 * time.Second), Kind: timeline.Call, Tool: "run_shell_command", Command: "npm install", Dir: "/w", DurationMS: 41_000, Exit: &zero},
		{Time: t0.Add(50 * time.Second), Kind: timeline.Call, Tool: "checkpoint", Checkpoint: "2", DurationMS: 180},
		{Time: t0.Add(60 * time.Second), Kind: timeline.Command, Source: "shell", Command: "make test\x1b[31m", DurationMS: 8200, Exit: &two},
		{Time: t0.Add(70 * time.Second), Kind: timeline.Call, Tool: "run_shell_command", Command: "sleep 9", Dir: "/w", Background: 1},
		{Time: t0.Add(70 * time.Second), Kind: timeline.BackgroundStart, Command: "sleep 9", Background: 1},
		{Time: t0.Add(80 * time.Second), Kind: timeline.Apply, Source: "review", Count: 1, Paths: []string{"src/a.go"}},
	} {
		tl.Record(e)
	}
	out, err := run(t, f, logcmd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"serve   write_file src/a.go (1840 bytes) (12 ms, 2 B back)",
		"serve   run_shell_command `npm install` (exit 0, 41 s)",
		"checkpoint checkpoint 2",
		"shell   shell `make test\\x1b[31m` (exit 2, 8.2 s)",
		"background 1 started: `sleep 9`",
		"review  apply: 1 path (src/a.go)",
		"8 events: 4 tool calls (3 shell commands), 1 failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("an escape reached the output:\n%q", out)
	}
	// --since the checkpoint: what came after it.
	out, err = run(t, f, logcmd.Options{Since: "2", JSON: true})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var e timeline.Event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		kinds = append(kinds, string(e.Kind)+":"+e.Tool)
	}
	if got := strings.Join(kinds, " "); got != "call:checkpoint command: call:run_shell_command background_start: apply:" {
		t.Errorf("--since 2 --json: %s", got)
	}
	// --since a time.
	if out, _ := run(t, f, logcmd.Options{Since: t0.Add(75 * time.Second).Format(time.RFC3339)}); !strings.Contains(out, "apply") || strings.Contains(out, "npm install") {
		t.Errorf("--since a time:\n%s", out)
	}
	// --commands: a script to read.
	out, err = run(t, f, logcmd.Options{Commands: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#!/bin/sh\n", "\nexit 1\n", "exit 0, 41 s\ncd /w && npm install\n", "shell, exit 2, 8.2 s\nmake test\\x1b[31m\n", "background 1\ncd /w && sleep 9 &\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("--commands lacks %q:\n%s", want, out)
		}
	}
	if i, j := strings.Index(out, "npm install"), strings.Index(out, "make test"); i < 0 || j < i {
		t.Errorf("--commands out of order:\n%s", out)
	}
	// Bad input.
	for _, tc := range []struct {
		opts logcmd.Options
		want string
	}{
		{logcmd.Options{Since: "99"}, "--since 99: not a time"},
		{logcmd.Options{Since: "yesterday-ish"}, "--since yesterday-ish: not a time"},
		{logcmd.Options{Since: "-5m"}, "--since -5m: a duration ago is positive"},
		{logcmd.Options{Commands: true, JSON: true}, "--commands and --json"},
		{logcmd.Options{Commands: true, Follow: true}, "--commands and --follow"},
	} {
		if _, err := run(t, f, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.opts, err, tc.want)
		}
	}
}

// --follow prints what is recorded after it started, until interrupted.
func TestLogFollow(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	tl := timeline.Open(f.Store.SessionDir(staging.SessionID(f.Workdir)), "serve", nil)
	tl.Record(timeline.Event{Kind: timeline.Call, Tool: "glob"})
	out := &syncBuffer{}
	ios := iostreams.New(strings.NewReader(""), out, &syncBuffer{}, false, false)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- logcmd.Run(ctx, &logcmd.Options{IO: ios, Instance: sessiontest.Instance, Open: f.Opener(), Workdir: f.Workdir, Follow: true, JSON: true, Poll: 20 * time.Millisecond})
	}()
	// The first event is printed before following starts; then a new one.
	deadline := time.Now().Add(60 * time.Second)
	recorded := false
	for !strings.Contains(out.String(), `"tool":"replace"`) {
		if !recorded && strings.Contains(out.String(), `"tool":"glob"`) {
			tl.Record(timeline.Event{Kind: timeline.Call, Tool: "replace"})
			recorded = true
		}
		if time.Now().After(deadline) {
			t.Fatalf("--follow did not print the new event in 60 s:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("--follow interrupted: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("--follow did not end when interrupted")
	}
}

// syncBuffer is a buffer written by the command and read by the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
