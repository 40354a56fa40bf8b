package logcmd_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/logcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
)

// --follow prints what a writer appends in the order the events began, as `log` does: it
// holds what it reads for the settle window, so that a network event serve writes after the
// next call is printed before it; an event read after a later one was printed is marked
// late; when interrupted, what it holds is printed. The clock and the looks are the test's:
// each send on ticks is one look at the time sent, and a send returns only once the look
// before it is done (look sends twice: the first look is done when it returns).
func TestLogFollowOrdersWhatItPrints(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	tl := timeline.Open(f.Store.SessionDir(staging.SessionID(f.Workdir)), "serve", nil)
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	tl.Record(timeline.Event{Time: t0, Kind: timeline.ServeStart, Note: "network policy none"})

	clock := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ticks := make(chan time.Time)
	look := func() { ticks <- clock; ticks <- clock }
	out := &syncBuffer{}
	ios := iostreams.New(strings.NewReader(""), out, &syncBuffer{}, false, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- logcmd.Run(ctx, &logcmd.Options{IO: ios, Instance: sessiontest.Instance, Open: f.Opener(), Workdir: f.Workdir,
			Follow: true, Ticks: ticks, Settle: 10 * time.Second})
	}()
	look() // following: what was there is printed
	if !strings.Contains(out.String(), "server started") {
		t.Fatalf("the event before --follow is not printed:\n%s", out.String())
	}

	// As serve writes them: the command when it returns, the next call when it returns, and
	// then the network event the command made, copied from the guest's record.
	zero := 0
	tl.Record(timeline.Event{Time: t0.Add(2 * time.Second), Kind: timeline.Call, Tool: "run_shell_command", Command: "curl https://evil.test", DurationMS: 5000, Exit: &zero})
	tl.Record(timeline.Event{Time: t0.Add(8 * time.Second), Kind: timeline.Call, Tool: "write_file", Paths: []string{"a.txt"}, DurationMS: 3})
	tl.Record(timeline.Event{Time: t0.Add(3 * time.Second), Kind: timeline.Network, Host: "evil.test", Port: 443, Verdict: "blocked", Via: "proxy", Count: 1, Note: "not in the allow list"})
	look() // reads the three
	clock = clock.Add(10*time.Second - time.Millisecond)
	look() // their window is not over
	if s := out.String(); strings.Contains(s, "curl") || strings.Contains(s, "evil.test") || strings.Contains(s, "write_file") {
		t.Fatalf("printed before the settle window ended:\n%s", s)
	}
	clock = clock.Add(time.Millisecond)
	look() // over: printed, in order
	s := out.String()
	order := []string{"server started", "run_shell_command `curl https://evil.test`", "serve   network: blocked evil.test:443", "write_file a.txt"}
	at := 0
	for _, want := range order {
		i := strings.Index(s[at:], want)
		if i < 0 {
			t.Fatalf("--follow lacks %q after byte %d (want the order %q):\n%q", want, at, order, s)
		}
		at += i + len(want)
	}
	if strings.Contains(s, "(late)") {
		t.Errorf("an event in order is marked late:\n%s", s)
	}

	// Read after write_file was printed, though it began before: printed, marked late.
	tl.Record(timeline.Event{Time: t0.Add(4 * time.Second), Kind: timeline.Network, Host: "pypi.test", Port: 443, Verdict: "allowed", Via: "proxy", Count: 1, BytesUp: 10, BytesDown: 20})
	look()
	clock = clock.Add(10 * time.Second)
	look()
	if s := out.String(); !strings.Contains(s[at:], "serve   (late) network: reached pypi.test:443") {
		t.Errorf("a late event is not printed with its mark:\n%s", s)
	}

	// An event whose window is over takes with it those held that began before it, though
	// read later: in order, none late.
	tl.Record(timeline.Event{Time: t0.Add(12 * time.Second), Kind: timeline.Call, Tool: "read_file", Paths: []string{"b.txt"}})
	look()
	clock = clock.Add(time.Second)
	tl.Record(timeline.Event{Time: t0.Add(11 * time.Second), Kind: timeline.Network, Host: "early.test", Port: 80, Verdict: "blocked", Via: "direct", Count: 1})
	look()
	clock = clock.Add(9 * time.Second) // read_file's window is over, not early.test's
	look()
	s = out.String()
	if i, j := strings.Index(s, "network: blocked early.test:80"), strings.Index(s, "read_file b.txt"); i < 0 || j < i || strings.Count(s, "(late)") != 1 {
		t.Errorf("the event held that began before one printed is not printed before it, or is marked late:\n%s", s)
	}

	// Interrupted: what was read and is held is printed.
	tl.Record(timeline.Event{Time: t0.Add(20 * time.Second), Kind: timeline.Call, Tool: "glob"})
	look()
	if strings.Contains(out.String(), "glob") {
		t.Fatalf("printed before the settle window ended:\n%s", out.String())
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
	if s := out.String(); !strings.Contains(s, "serve   glob") || strings.Count(s, "(late)") != 1 {
		t.Errorf("interrupted: the held event is not printed, or one is marked late that is not:\n%s", s)
	}
}
