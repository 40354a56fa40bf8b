package enforce

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// curlResult is what a curl run in the background gave.
type curlResult struct {
	out  string
	code int
}

// curlAsync runs curl as the agent (as curlAs) in the background.
func (f *proxyFixture) curlAsync(args ...string) <-chan curlResult {
	res := make(chan curlResult, 1)
	go func() {
		cmd := exec.Command("runuser", append([]string{"-u", f.agent, "--", "curl", "-sS", "-m", "30", "-x", "http://" + f.addr}, args...)...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			code, out = -1, []byte(err.Error())
		}
		res <- curlResult{string(out), code}
	}()
	return res
}

// watch keeps the marker of lmcp-test fresh, as `net report --watch` does every second,
// until the test ends.
func (f *proxyFixture) watch(t *testing.T) {
	t.Helper()
	if err := MarkWatched(f.layout, "lmcp-test", ""); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = MarkWatched(f.layout, "lmcp-test", "")
			}
		}
	}()
	f.stopWatch = func() { cancel(); <-done }
	t.Cleanup(f.endWatch)
}

// endWatch ends the watch that watch started (its marker stays, fresh for a while).
func (f *proxyFixture) endWatch() {
	if f.stopWatch != nil {
		f.stopWatch()
		f.stopWatch = nil
	}
}

// waitHeld waits (bounded) until n connections of lmcp-test are held, and returns them.
func (f *proxyFixture) waitHeld(t *testing.T, n int) []netpolicy.HeldConn {
	t.Helper()
	start := time.Now()
	for {
		held, err := heldConns(f.layout, "lmcp-test")
		if err != nil {
			t.Fatal(err)
		}
		if len(held) == n {
			t.Logf("%d held after %v", n, time.Since(start))
			return held
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("%d connections held, not %d: %+v", len(held), n, held)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitLogged waits (bounded) for an entry with this reason, the newest after skip entries
// (the log is written as the connection ends, which may be just after its client ended).
func (f *proxyFixture) waitLogged(t *testing.T, skip int, reason string) netpolicy.Entry {
	t.Helper()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		entries := f.logEntries(t)
		for i := len(entries) - 1; i >= skip; i-- {
			if entries[i].Reason == reason {
				return entries[i]
			}
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("no entry %q logged: %+v", reason, entries)
		}
	}
}

func wait(t *testing.T, res <-chan curlResult) curlResult {
	t.Helper()
	select {
	case r := <-res:
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("curl did not end")
	}
	return curlResult{}
}

// A refused connection is held while a person watches: listed with its id, and "once" lets
// exactly it through (the client gets the upstream's answer, the log says why); the next one
// is held again.
func TestProxyHoldsWhileWatchedAndAllowsOnce(t *testing.T) {
	f := startProxyFixture(t, "allow:localhost")
	f.watch(t)
	port := f.upstream.Listener.Addr().(*net.TCPAddr).Port
	target := fmt.Sprintf("http://127.0.0.1:%d/once", port)
	for _, args := range [][]string{{target}, {"-p", target}} {
		logged := len(f.logEntries(t))
		res := f.curlAsync(args...)
		held := f.waitHeld(t, 1)
		if h := held[0]; h.Host != "127.0.0.1" || h.Port != port || h.SecondsLeft <= 0 || h.SecondsLeft > 60 {
			t.Errorf("held: %+v", h)
		}
		rec, err := Report(f.layout, "lmcp-test", 0)
		if err != nil || len(rec.Held) != 1 || rec.Held[0].ID != held[0].ID {
			t.Errorf("the report's held connections: %+v, %v", rec.Held, err)
		}
		if err := Decide(f.layout, "lmcp-test", held[0].ID, netpolicy.DecisionOnce); err != nil {
			t.Fatal(err)
		}
		r := wait(t, res)
		if r.code != 0 || !strings.Contains(r.out, "hello GET /once") {
			t.Fatalf("%v allowed once: exit %d\n%s", args, r.code, r.out)
		}
		if e := f.waitLogged(t, logged, "allowed once by the person"); e.Verdict != netpolicy.VerdictAllowed || e.BytesDown == 0 {
			t.Errorf("%v: logged %+v", args, e)
		}
		f.waitHeld(t, 0)
		if err := Decide(f.layout, "lmcp-test", held[0].ID, netpolicy.DecisionOnce); err == nil || !strings.Contains(err.Error(), "is held now") {
			t.Errorf("a decision on a connection no longer held: %v", err)
		}
	}
}

// deny refuses the held connection at once, and the agent reads that the person was asked.
func TestProxyHeldDenied(t *testing.T) {
	f := startProxyFixture(t, "allow:localhost")
	f.watch(t)
	port := f.upstream.Listener.Addr().(*net.TCPAddr).Port
	res := f.curlAsync("-i", fmt.Sprintf("http://127.0.0.1:%d/", port))
	held := f.waitHeld(t, 1)
	if err := Decide(f.layout, "lmcp-test", held[0].ID, "maybe"); err == nil {
		t.Error("a decision neither once nor deny was taken")
	}
	if err := Decide(f.layout, "lmcp-test", "../../etc/passwd", netpolicy.DecisionDeny); err == nil {
		t.Error("an id that is not one was taken")
	}
	if err := Decide(f.layout, "lmcp-test", held[0].ID, netpolicy.DecisionDeny); err != nil {
		t.Fatal(err)
	}
	r := wait(t, res)
	want := fmt.Sprintf("the person watching this agent was asked and refused it (ask them to allow it: limactl mcp network INSTANCE allow 127.0.0.1:%d)", port)
	if !strings.Contains(r.out, "403 Forbidden") || !strings.Contains(r.out, want) || strings.Contains(r.out, "hello") {
		t.Fatalf("denied: exit %d\n%s", r.code, r.out)
	}
	if e := f.waitLogged(t, 0, "denied by the person"); e.Verdict != netpolicy.VerdictBlocked {
		t.Errorf("logged %+v", e)
	}
}

// Undecided, a held connection is refused when its time is up.
func TestProxyHeldTimesOut(t *testing.T) {
	f := startProxyFixtureWith(t, "allow:localhost", func(p *Proxy) { p.holdFor = time.Second })
	f.watch(t)
	port := f.upstream.Listener.Addr().(*net.TCPAddr).Port
	start := time.Now()
	r := wait(t, f.curlAsync("-i", fmt.Sprintf("http://127.0.0.1:%d/", port)))
	t.Logf("refused after %v", time.Since(start))
	if !strings.Contains(r.out, "403 Forbidden") || !strings.Contains(r.out, "was asked and did not allow it in 1 s") {
		t.Fatalf("timed out: exit %d\n%s", r.code, r.out)
	}
	f.waitLogged(t, 0, "held: the person did not decide")
	f.waitHeld(t, 0)
}

// Allowing the destination for the session (a new policy) lets the held connection through.
func TestProxyHeldAllowedByPolicy(t *testing.T) {
	f := startProxyFixture(t, "allow:localhost")
	f.watch(t)
	port := f.upstream.Listener.Addr().(*net.TCPAddr).Port
	res := f.curlAsync("-p", fmt.Sprintf("http://127.0.0.1:%d/later", port))
	f.waitHeld(t, 1)
	u, _ := user.Lookup(f.agent)
	uid, _ := strconv.Atoi(u.Uid)
	writePolicy(t, f.layout, UserPolicy{User: "lmcp-test", UID: uid, Policy: fmt.Sprintf("allow:localhost,127.0.0.1:%d", port)})
	r := wait(t, res)
	if r.code != 0 || !strings.Contains(r.out, "hello GET /later") {
		t.Fatalf("allowed while held: exit %d\n%s", r.code, r.out)
	}
	if e := f.waitLogged(t, 0, "allowed by the person while held"); e.Verdict != netpolicy.VerdictAllowed {
		t.Errorf("logged %+v", e)
	}
}

// Nobody watching (no marker, or one gone stale): refused at once, as without this feature.
func TestProxyNotHeldWhenNotWatched(t *testing.T) {
	f := startProxyFixture(t, "allow:localhost")
	port := f.upstream.Listener.Addr().(*net.TCPAddr).Port
	target := fmt.Sprintf("http://127.0.0.1:%d/", port)
	check := func(when string) {
		t.Helper()
		logged := len(f.logEntries(t))
		r := wait(t, f.curlAsync("-i", target))
		if !strings.Contains(r.out, "403 Forbidden") || !strings.Contains(r.out, "is not on the allowlist") {
			t.Errorf("%s: exit %d\n%s", when, r.code, r.out)
		}
		f.waitLogged(t, logged, "not on the allowlist")
	}
	check("never watched")
	// Watched, a name longer than DNS allows is refused at once (the record would not check
	// out on the host with it).
	f.watch(t)
	long := strings.Repeat("a", 300) + ".test"
	if r := wait(t, f.curlAsync("-i", "-p", "http://"+long+"/")); !strings.Contains(r.out, "403") {
		t.Errorf("a long name, watched: exit %d\n%s", r.code, r.out)
	}
	f.waitHeld(t, 0)
	f.endWatch()
	if err := MarkWatched(f.layout, "lmcp-test", ""); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(f.layout.watchedFile("lmcp-test"), old, old); err != nil {
		t.Fatal(err)
	}
	check("watched a minute ago")
	// A link planted for the marker is not followed (the directory is root's 0700 anyway).
	if err := os.Remove(f.layout.watchedFile("lmcp-test")); err != nil {
		t.Fatal(err)
	}
	fresh := f.layout.heldDir() + "/fresh"
	if err := os.WriteFile(fresh, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fresh, f.layout.watchedFile("lmcp-test")); err != nil {
		t.Fatal(err)
	}
	check("a link for the marker")
}

// At most MaxHeldPerUser are held at once: one more is refused at once; a client that hangs
// up frees its place.
func TestProxyHeldCapAndHangUp(t *testing.T) {
	f := startProxyFixture(t, "allow:localhost")
	f.watch(t)
	port := f.upstream.Listener.Addr().(*net.TCPAddr).Port
	target := fmt.Sprintf("http://127.0.0.1:%d/", port)
	var results []<-chan curlResult
	for i := 0; i < netpolicy.MaxHeldPerUser-1; i++ {
		results = append(results, f.curlAsync(target))
	}
	f.waitHeld(t, netpolicy.MaxHeldPerUser-1)
	quitter := f.curlAsync("-m", "2", target) // hangs up after 2 s
	f.waitHeld(t, netpolicy.MaxHeldPerUser)
	r := wait(t, f.curlAsync("-i", target))
	if !strings.Contains(r.out, "403 Forbidden") || !strings.Contains(r.out, "is not on the allowlist") {
		t.Errorf("one more than the cap: exit %d\n%s", r.code, r.out)
	}
	if r := wait(t, quitter); r.code == 0 {
		t.Errorf("the client that hung up: %s", r.out)
	}
	held := f.waitHeld(t, netpolicy.MaxHeldPerUser-1)
	f.waitLogged(t, 0, "held: the client hung up")
	// Its place is free: another one is held.
	results = append(results, f.curlAsync(target))
	held = f.waitHeld(t, netpolicy.MaxHeldPerUser)
	for _, h := range held {
		if err := Decide(f.layout, "lmcp-test", h.ID, netpolicy.DecisionDeny); err != nil {
			t.Error(err)
		}
	}
	for _, res := range results {
		if r := wait(t, res); !strings.Contains(r.out, "refused it") {
			t.Errorf("denied: %s", r.out)
		}
	}
}

// Two named watches of one agent: while either marker is fresh a refused connection is held.
// The first stopping cleanly (Unwatch) changes nothing for the second's held connection; the
// last stopping refuses what is held at once ("the watch ended", not WatchedFresh later) and
// the next refused connection is refused at once, not held. A watch killed without Unwatch
// leaves a marker that goes stale, and the next watch's mark removes it.
func TestProxyUnwatchEndsTheHoldAtOnce(t *testing.T) {
	f := startProxyFixture(t, "allow:localhost")
	a, b := netpolicy.NewHeldID(), netpolicy.NewHeldID()
	for _, w := range []string{a, b} {
		if err := MarkWatched(f.layout, "lmcp-test", w); err != nil {
			t.Fatal(err)
		}
	}
	port := f.upstream.Listener.Addr().(*net.TCPAddr).Port
	target := fmt.Sprintf("http://127.0.0.1:%d/", port)
	res := f.curlAsync("-i", target)
	f.waitHeld(t, 1)
	if err := Unwatch(f.layout, "lmcp-test", a); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * holdPoll)
	select {
	case r := <-res:
		t.Fatalf("one of two watches stopped: the held connection ended: exit %d\n%s", r.code, r.out)
	default:
	}
	f.waitHeld(t, 1)
	// Marked again just before it stops: a marker left behind would hold for WatchedFresh more.
	if err := MarkWatched(f.layout, "lmcp-test", b); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := Unwatch(f.layout, "lmcp-test", b); err != nil {
		t.Fatal(err)
	}
	r := wait(t, res)
	if !strings.Contains(r.out, "403") || !strings.Contains(r.out, "the watch ended before they allowed it") {
		t.Errorf("the last watch stopped: want the refusal naming it, got exit %d\n%s", r.code, r.out)
	}
	if d := time.Since(t0); d >= watchedFresh/2 {
		t.Errorf("the held connection was refused %s after the last watch stopped: its marker was left to go stale", d)
	}
	f.waitHeld(t, 0)
	r = wait(t, f.curlAsync("-i", target))
	if !strings.Contains(r.out, "403") || strings.Contains(r.out, "was asked") {
		t.Errorf("after the watches stopped: want the plain refusal, got exit %d\n%s", r.code, r.out)
	}

	// Bad input: refused, nothing removed.
	if err := Unwatch(f.layout, "lmcp-test", "../held"); err == nil {
		t.Error("Unwatch took a watcher that is not an id")
	}
	if err := MarkWatched(f.layout, "lmcp-test", "x/../y"); err == nil {
		t.Error("MarkWatched took a watcher that is not an id")
	}
	if err := Unwatch(f.layout, "lmcp-test", a); err != nil {
		t.Errorf("Unwatch of a watch already gone: %v", err)
	}

	// A killed watch's marker: stale, not counted, removed by the next mark.
	if err := MarkWatched(f.layout, "lmcp-test", a); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(f.layout.watcherFile("lmcp-test", a), old, old); err != nil {
		t.Fatal(err)
	}
	if watched(f.layout, "lmcp-test") {
		t.Error("a stale marker counts as a watch")
	}
	if err := MarkWatched(f.layout, "lmcp-test", b); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(f.layout.watcherFile("lmcp-test", a)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the stale marker is still there: %v", err)
	}
	if !watched(f.layout, "lmcp-test") {
		t.Error("a fresh named marker does not count as a watch")
	}
}
