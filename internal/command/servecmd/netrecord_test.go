package servecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
	"github.com/limactl-mcp/limactl-mcp/internal/tools"
)

// fakeGuest is the guest's network record as `net report` prints it, growing as the test
// adds attempts; reads go through netpolicy.ParseRecord as serve's do.
type fakeGuest struct {
	mu      sync.Mutex
	entries []netpolicy.Entry
	reads   int
	block   chan struct{} // while not nil, a read waits for it (or its context)
	fail    error
}

const fakeUser = "lmcp-00aa11bb22cc"

func (g *fakeGuest) add(host, verdict string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.entries = append(g.entries, netpolicy.Entry{Time: time.Now().UTC(), Host: host, Port: 443, Verdict: verdict, Via: netpolicy.ViaProxy})
}

func (g *fakeGuest) read(ctx context.Context) (netpolicy.Record, error) {
	g.mu.Lock()
	block, fail := g.block, g.fail
	g.reads++
	tot := netpolicy.NewTotals()
	for _, e := range g.entries {
		tot.Add(e)
	}
	data, _ := json.Marshal(netpolicy.Record{User: fakeUser, Source: "totals", Summary: tot.Summary(), Entries: append([]netpolicy.Entry(nil), g.entries...)})
	g.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return netpolicy.Record{}, ctx.Err()
		}
	}
	if fail != nil {
		return netpolicy.Record{}, fail
	}
	return netpolicy.ParseRecord(data, fakeUser)
}

func callReq(t *testing.T, tool string, args map[string]any, out any) (*mcp.CallToolRequest, *mcp.CallToolResult) {
	t.Helper()
	raw, _ := json.Marshal(args)
	res := &mcp.CallToolResult{}
	data, _ := json.Marshal(out)
	res.StructuredContent = json.RawMessage(data)
	res.Content = []mcp.Content{&mcp.TextContent{Text: string(data)}}
	return &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool, Arguments: raw}}, res
}

// waitHosts waits until the timeline in dir has a network event for each of hosts.
func waitHosts(t *testing.T, dir string, hosts ...string) []timeline.Event {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tl, err := timeline.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		var net []timeline.Event
		have := map[string]bool{}
		for _, e := range tl.Events {
			if e.Kind == timeline.Network {
				net = append(net, e)
				have[e.Host] = true
			}
		}
		all := true
		for _, h := range hosts {
			all = all && have[h]
		}
		if all {
			return net
		}
		if time.Now().After(deadline) {
			t.Fatalf("no network event for %v in 30 s: %+v", hosts, net)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A run_shell_command call pokes the network recorder, which copies the record into the
// timeline after the call, never during it (a slow guest does not slow the call); while a
// background process may run it looks without a call; at the server's end it reads a last
// time, bounded when the guest does not answer; a failing read is said once.
func TestNetRecorder(t *testing.T) {
	dir := t.TempDir()
	tl := timeline.Open(dir, "serve", nil)
	tl.Record(timeline.Event{Kind: timeline.ServeStart})
	g := &fakeGuest{}
	var logBuf lockedBuffer
	log := slog.New(slog.NewTextHandler(&logBuf, nil))
	r := newRecorder(tl, "/w", "/w")
	r.net = newNetRecorder(tl, g.read, log, r.backgroundMayRun)
	r.net.settle, r.net.poll = 20*time.Millisecond, 50*time.Millisecond
	r.net.start()
	zero := 0
	shell := func() {
		req, res := callReq(t, "run_shell_command", map[string]any{"command": []string{"curl", "https://evil.test"}}, &tools.RunShellCommandResult{ExitCode: &zero})
		r.record(req, res, nil, time.Now(), time.Millisecond)
	}

	// A command's blocked attempt reaches the timeline after the call.
	g.add("evil.test", netpolicy.VerdictBlocked)
	shell()
	net := waitHosts(t, dir, "evil.test")
	if len(net) != 1 || net[0].Verdict != "blocked" || net[0].Count != 1 {
		t.Errorf("events: %+v", net)
	}

	// The guest takes its time: the call is not held by it.
	g.mu.Lock()
	g.block = make(chan struct{})
	g.mu.Unlock()
	g.add("slow.test", netpolicy.VerdictAllowed)
	shell()
	time.Sleep(100 * time.Millisecond) // the recorder is now waiting on the guest
	start := time.Now()
	for range 50 {
		shell()
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("50 calls took %v while the guest's record was slow", took)
	}
	g.mu.Lock()
	close(g.block)
	g.block = nil
	g.mu.Unlock()
	waitHosts(t, dir, "slow.test")

	// No call, no background process: no read.
	g.mu.Lock()
	reads := g.reads
	g.mu.Unlock()
	time.Sleep(300 * time.Millisecond)
	g.mu.Lock()
	if g.reads > reads+1 { // a poke of the calls above may still be pending
		t.Errorf("%d reads without a call", g.reads-reads)
	}
	g.mu.Unlock()
	// A background process may run: the recorder looks by itself.
	bgID := 4
	req, res := callReq(t, "run_shell_command", map[string]any{"command": []string{"npm", "start"}, "background": true}, &tools.RunShellCommandResult{BackgroundID: &bgID})
	r.record(req, res, nil, time.Now(), time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	g.add("daemon.test", netpolicy.VerdictBlocked)
	waitHosts(t, dir, "daemon.test")

	// What came after the last look is read when the server ends (the background process
	// killed: no look by itself any more).
	req, res = callReq(t, "kill_background_process", map[string]any{"id": bgID}, &tools.KillBackgroundProcessResult{})
	r.record(req, res, nil, time.Now(), time.Millisecond)
	if r.backgroundMayRun() {
		t.Error("a killed background process may still run")
	}
	time.Sleep(300 * time.Millisecond) // the kill's poke read
	g.add("last.test", netpolicy.VerdictBlocked)
	time.Sleep(200 * time.Millisecond)
	if tl, _ := timeline.Read(dir); strings.Contains(jsonOf(tl.Events), "last.test") {
		t.Fatal("read without a call or a background process")
	}
	r.net.stop()
	net = waitHosts(t, dir, "last.test")
	seen := map[string]int{}
	for _, e := range net {
		seen[e.Host] += e.Count
	}
	for _, h := range []string{"evil.test", "slow.test", "daemon.test", "last.test"} {
		if seen[h] != 1 {
			t.Errorf("%s recorded %d times: %+v", h, seen[h], net)
		}
	}

	// A guest that does not answer holds the server's end for netEndTimeout at most; a read
	// that fails is said once.
	g.mu.Lock()
	g.block = make(chan struct{})
	g.mu.Unlock()
	n2 := newNetRecorder(tl, g.read, log, nil).start()
	start = time.Now()
	n2.stop()
	if took := time.Since(start); took > netEndTimeout+5*time.Second {
		t.Errorf("the last read took %v", took)
	}
	g.mu.Lock()
	close(g.block)
	g.block, g.fail = nil, errors.New("sudo: a password is required")
	g.mu.Unlock()
	n3 := newNetRecorder(tl, g.read, log, nil)
	n3.settle = time.Millisecond
	n3.start()
	for range 3 {
		n3.Poke()
		time.Sleep(50 * time.Millisecond)
	}
	n3.stop()
	if got := strings.Count(logBuf.String(), "sudo: a password is required"); got != 1 {
		t.Errorf("the failure was logged %d times:\n%s", got, logBuf.String())
	}
	var nilRec *netRecorder
	nilRec.Poke() // a session without a policy: nothing, no panic
	nilRec.stop()
}

func jsonOf(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
