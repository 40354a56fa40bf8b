package watchcmd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/command/watchcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/iostreams"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/lockedbuf"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// The guest's record stands in a file of the sshd's "guest" (the test's sshd user has no sudo
// to ask root's runner for it, as NetRecord does); watch reads it through its connection, as
// the record's bytes come from the guest, and checks it as guest output.

// recordPath is where a fixture's test keeps the guest's record: beside the session's copy
// (removed with it).
func recordPath(f *sessiontest.Fixture) string {
	return path.Join(path.Dir(f.GuestPath), "netrecord.json")
}

// writeRecord writes `net report`'s answer for the fixture's session with entries into the
// guest, over a connection of its own.
func writeRecord(t *testing.T, f *sessiontest.Fixture, conn *guest.Conn, entries ...netpolicy.Entry) {
	t.Helper()
	writeRecordHeld(t, f, conn, nil, entries...)
}

// writeRecordHeld is writeRecord with the connections the guest's proxy holds.
func writeRecordHeld(t *testing.T, f *sessiontest.Fixture, conn *guest.Conn, held []netpolicy.HeldConn, entries ...netpolicy.Entry) {
	t.Helper()
	tot := netpolicy.NewTotals()
	for _, e := range entries {
		tot.Add(e)
	}
	user := staging.AgentUser(staging.SessionID(f.Workdir))
	data, err := json.Marshal(netpolicy.Record{User: user, Source: "totals", Summary: tot.Summary(), Entries: entries, Held: held})
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.WriteFile(context.Background(), recordPath(f), data, 0o644, true); err != nil {
		t.Fatal(err)
	}
}

// readGuestRecord is Options.ReadRecord reading the test's record through the watch's own
// connection to the guest.
func readGuestRecord(f *sessiontest.Fixture) func(ctx context.Context, t *sessionopen.Target, user, watcher string) ([]byte, error) {
	return func(ctx context.Context, t *sessionopen.Target, user, watcher string) ([]byte, error) {
		return t.Conn.ReadFile(ctx, recordPath(f), netpolicy.MaxRecordBytes)
	}
}

func setStoredNetwork(t *testing.T, f *sessiontest.Fixture, network string) {
	t.Helper()
	st, _, err := f.Store.Load(f.Workdir)
	if err != nil {
		t.Fatal(err)
	}
	st.Network = network
	if err := f.Store.Save(st, nil); err != nil {
		t.Fatal(err)
	}
}

func blockedEntry(at time.Time, host string, port int) netpolicy.Entry {
	return netpolicy.Entry{Time: at, Host: host, Port: port, Verdict: netpolicy.VerdictBlocked, Via: netpolicy.ViaProxy, Reason: "not in the allow list"}
}

// --json streams a blocked attempt written to the guest's record, then its new count when the
// agent tries again, one JSON object a line, without a terminal, until interrupted; an
// allowed connection is not in it.
func TestWatchJSONStream(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	setStoredNetwork(t, f, "allow:a.test")
	writer := guesttest.Connect(t, f.Srv, guest.Options{NoLoginShell: true})
	t0 := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	writeRecord(t, f, writer,
		netpolicy.Entry{Time: t0, Host: "a.test", Port: 443, Verdict: netpolicy.VerdictAllowed, Via: netpolicy.ViaProxy},
		blockedEntry(t0.Add(time.Second), "evil.test", 443))

	w := startJSONWatch(t, f)
	lines, errOut, done := w.lines, w.errOut, w.done
	next := func() watchcmd.Destination {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the stream ended: %v (stderr: %s; Run: %v)", lines.Err(), errOut, <-done)
		}
		var d watchcmd.Destination
		if err := json.Unmarshal(lines.Bytes(), &d); err != nil {
			t.Fatalf("not a JSON line: %q: %v", lines.Text(), err)
		}
		return d
	}
	d := next()
	if d.Host != "evil.test" || d.Port != 443 || d.Attempts != 1 || !d.First.Equal(t0.Add(time.Second)) || d.Via != netpolicy.ViaProxy || d.Reason != "not in the allow list" {
		t.Errorf("first line: %+v", d)
	}
	writeRecord(t, f, writer,
		netpolicy.Entry{Time: t0, Host: "a.test", Port: 443, Verdict: netpolicy.VerdictAllowed, Via: netpolicy.ViaProxy},
		blockedEntry(t0.Add(time.Second), "evil.test", 443),
		blockedEntry(t0.Add(2*time.Second), "evil.test", 443))
	d = next()
	if d.Host != "evil.test" || d.Attempts != 2 || !d.First.Equal(t0.Add(time.Second)) || !d.Last.Equal(t0.Add(2*time.Second)) {
		t.Errorf("after the second attempt: %+v", d)
	}
	w.stop(t)
}

// --json streams a held connection once, when first read, with "held": true, its id and the
// seconds left, before the blocked ones.
func TestWatchJSONStreamHeld(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	setStoredNetwork(t, f, "allow:a.test")
	writer := guesttest.Connect(t, f.Srv, guest.Options{NoLoginShell: true})
	t0 := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	held := []netpolicy.HeldConn{{ID: "0123456789abcdef", Host: "h.test", Port: 443, Since: t0, SecondsLeft: 42}}
	writeRecordHeld(t, f, writer, held, blockedEntry(t0, "b.test", 443))
	w := startJSONWatch(t, f)
	lines, errOut := w.lines, w.errOut
	var got []string
	for len(got) < 3 && lines.Scan() {
		got = append(got, lines.Text())
		if len(got) == 2 {
			// A new held connection beside the one read already: only the new one is printed.
			held = append(held, netpolicy.HeldConn{ID: "fedcba9876543210", Host: "i.test", Port: 80, Since: t0, SecondsLeft: 7})
			writeRecordHeld(t, f, writer, held, blockedEntry(t0, "b.test", 443))
		}
	}
	w.stop(t)
	if len(got) != 3 || !strings.Contains(got[0], `"host":"h.test","port":443`) || !strings.Contains(got[0], `"held":true,"id":"0123456789abcdef","seconds_left":42`) ||
		!strings.Contains(got[1], `"host":"b.test"`) || strings.Contains(got[1], `"held"`) ||
		!strings.Contains(got[2], `"host":"i.test","port":80`) || !strings.Contains(got[2], `"held":true,"id":"fedcba9876543210","seconds_left":7`) {
		t.Errorf("lines:\n%s\nstderr: %s", strings.Join(got, "\n"), errOut)
	}
}

// What watch refuses, each with what to do instead: a session whose policy is open (nothing is
// blocked), no terminal without --json, a record that is not one, an interval out of bounds.
func TestWatchRefuses(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	run := func(o watchcmd.Options) error {
		ios, _, _, _ := iostreams.Test()
		o.IO, o.Instance, o.Workdir, o.Open = ios, sessiontest.Instance, f.Workdir, f.Opener()
		if o.ReadRecord == nil {
			o.ReadRecord = readGuestRecord(f)
		}
		return watchcmd.Run(context.Background(), &o)
	}
	if err := run(watchcmd.Options{JSON: true}); err == nil || !strings.Contains(err.Error(), "policy is open: nothing is blocked") || !strings.Contains(err.Error(), "limactl mcp serve --network=none") {
		t.Errorf("open: %v", err)
	}
	setStoredNetwork(t, f, "none")
	if err := run(watchcmd.Options{}); err == nil || !strings.Contains(err.Error(), "with --json") {
		t.Errorf("no terminal: %v", err)
	}
	writer := guesttest.Connect(t, f.Srv, guest.Options{NoLoginShell: true})
	if err := writer.WriteFile(context.Background(), recordPath(f), []byte("\x1b[2J not json"), 0o644, true); err != nil {
		t.Fatal(err)
	}
	if err := run(watchcmd.Options{JSON: true}); err == nil || !strings.Contains(err.Error(), "the network record is not JSON") {
		t.Errorf("a record that is not JSON: %v", err)
	}
	if err := run(watchcmd.Options{JSON: true, Interval: time.Hour}); err == nil || !strings.Contains(err.Error(), "is not between") {
		t.Errorf("interval: %v", err)
	}
	if err := run(watchcmd.Options{JSON: true, ReadRecord: func(context.Context, *sessionopen.Target, string, string) ([]byte, error) {
		return nil, io.ErrUnexpectedEOF
	}}); err == nil || !strings.Contains(err.Error(), "reading the agent's network record: unexpected EOF") {
		t.Errorf("a failing read: %v", err)
	}
}

// jsonWatch is `watch --json` running on f's session, its stdout read line by line.
type jsonWatch struct {
	lines  *bufio.Scanner
	errOut *lockedbuf.Buffer
	done   chan error
	out    *io.PipeReader
	cancel context.CancelFunc
}

func startJSONWatch(t *testing.T, f *sessiontest.Fixture) *jsonWatch {
	t.Helper()
	pr, pw := io.Pipe()
	w := &jsonWatch{errOut: &lockedbuf.Buffer{}, done: make(chan error, 1), out: pr, lines: bufio.NewScanner(pr)}
	ios := iostreams.New(strings.NewReader(""), pw, w.errOut, false, false)
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go func() {
		w.done <- watchcmd.Run(ctx, &watchcmd.Options{IO: ios, Instance: sessiontest.Instance, Workdir: f.Workdir, JSON: true,
			Interval: 50 * time.Millisecond, Open: f.Opener(), ReadRecord: readGuestRecord(f)})
		pw.Close()
	}()
	return w
}

// stop interrupts the watch (what a last read printed is discarded) and checks it ended well.
func (w *jsonWatch) stop(t *testing.T) {
	t.Helper()
	w.cancel()
	go io.Copy(io.Discard, w.out)
	if err := <-w.done; err != nil {
		t.Errorf("interrupted: %v", err)
	}
}
