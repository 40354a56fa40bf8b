package secrets

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// heldRelay is ruledRelay under `HOST:ro` with a session directory to hold requests in, and
// holdFor as the bound of a hold.
func heldRelay(t *testing.T, h *harness, holdFor time.Duration) (r *Relay, log *Log, c *http.Client) {
	t.Helper()
	r, log, c = ruledRelay(t, h, []string{unboundHost + ":ro"})
	r.HoldDir, r.HoldFor = t.TempDir(), holdFor
	return r, log, c
}

// waitHeld waits until dir's relay holds n requests, and returns them.
func waitHeld(t *testing.T, dir string, n int) []HeldRequest {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		held, err := HeldRequests(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(held) == n {
			return held
		}
		if time.Now().After(deadline) {
			t.Fatalf("the relay holds %d requests, want %d: %+v", len(held), n, held)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// keepWatched refreshes dir's watched marker, as a watch's reads do, until the test ends.
func keepWatched(t *testing.T, dir string) {
	t.Helper()
	if err := MarkWatched(dir, ""); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				_ = MarkWatched(dir, "")
			}
		}
	}()
	t.Cleanup(func() { close(stop); wg.Wait() })
}

type result struct {
	code int
	body string
}

// send makes the request in a goroutine of its own: its result comes on the channel.
func send(t *testing.T, c *http.Client, method, path, body string) <-chan result {
	out := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest(method, "https://"+unboundHost+path, strings.NewReader(body))
		resp, err := c.Do(req)
		if err != nil {
			out <- result{body: err.Error()}
			return
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		out <- result{resp.StatusCode, b.String()}
	}()
	return out
}

func await(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("no answer in 30 s")
		return result{}
	}
}

// TestRelayHoldsWhileWatched: with nobody watching, a refused request is answered 403 at once
// and nothing is held; while a watch keeps the marker fresh, it waits, listed with its method
// and escaped path, for the person: once lets it (its body too) through to the server, that
// one only; deny refuses it without the server seeing it; and both say so.
func TestRelayHoldsWhileWatched(t *testing.T) {
	h := newHarness(t)
	r, log, c := heldRelay(t, h, time.Minute)
	dir := r.HoldDir

	start := time.Now()
	if r := await(t, send(t, c, "PUT", "/a", "x")); r.code != 403 || strings.Contains(r.body, "was asked") {
		t.Fatalf("unwatched: %d %q, want the 403 at once", r.code, r.body)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("an unwatched refusal took %s", took)
	}
	if held, _ := HeldRequests(dir); len(held) != 0 {
		t.Fatalf("held with nobody watching: %+v", held)
	}

	keepWatched(t, dir)
	ch := send(t, c, "PUT", "/o/r.x/pkg+1", "the-body")
	held := waitHeld(t, dir, 1)[0]
	if held.Method != "PUT" || held.Path != "/o/r.x/pkg+1" || held.Host != unboundHost+":443" || !CheckHeldID(held.ID) || held.Command != ruledCommand {
		t.Errorf("held %+v", held)
	}
	if left := time.Until(held.Deadline); left < 50*time.Second || left > time.Minute+time.Second {
		t.Errorf("held until %s (%s from now), want about a minute", held.Deadline, left)
	}
	if n := len(h.requests(unboundHost)); n != 0 {
		t.Fatalf("the server got %d requests while one was held", n)
	}
	if now := r.Held(); len(now) != 1 || now[0].ID != held.ID || now[0].Request != "PUT /o/r.x/pkg+1" || now[0].Host != unboundHost || now[0].Port != 443 || now[0].SecondsLeft < 50 {
		t.Errorf("the relay says it holds %+v", now)
	}
	if err := DecideHeld(dir, held.ID, netpolicy.DecisionOnce); err != nil {
		t.Fatal(err)
	}
	if r := await(t, ch); r.code != 200 {
		t.Fatalf("allowed once: %d %q", r.code, r.body)
	}
	seen := h.requests(unboundHost)
	if len(seen) != 1 || seen[0].req.Method != "PUT" || !strings.HasSuffix(seen[0].dump, "the-body") {
		t.Fatalf("the server saw %+v, want the one PUT with its body", seen)
	}
	waitHeld(t, dir, 0)

	ch = send(t, c, "DELETE", "/o", "")
	held = waitHeld(t, dir, 1)[0]
	if err := DecideHeld(dir, held.ID, netpolicy.DecisionDeny); err != nil {
		t.Fatal(err)
	}
	if r := await(t, ch); r.code != 403 || !strings.Contains(r.body, "the person watching the session was asked and refused it") {
		t.Fatalf("denied: %d %q", r.code, r.body)
	}
	if n := len(h.requests(unboundHost)); n != 1 {
		t.Errorf("the server got %d requests, want the one allowed", n)
	}
	if err := DecideHeld(dir, held.ID, netpolicy.DecisionOnce); err == nil || !strings.Contains(err.Error(), "not held") {
		t.Errorf("deciding on a request no longer held: %v", err)
	}
	sum := strings.Join(log.RequestsSummary(), "\n")
	if want := unboundHost + ": 1 HTTPS requests allowed by the network rules (1 of them once, by the person watching), 2 refused (the last: DELETE /o)"; sum != want {
		t.Errorf("summary %q, want %q", sum, want)
	}
}

// TestRelayHoldEnds: a held request is refused when its time is up, and when the watch stops
// (its marker goes stale); a request no exact rule could allow (a method that reads as two,
// a path a rule cannot hold) is never held; more than MaxHeld at once are refused at once.
func TestRelayHoldEnds(t *testing.T) {
	h := newHarness(t)
	r, _, c := heldRelay(t, h, 1500*time.Millisecond)
	dir := r.HoldDir
	keepWatched(t, dir)
	if res := await(t, send(t, c, "POST", "/late", "")); res.code != 403 || !strings.Contains(res.body, "was asked and did not allow it in 1.5s") {
		t.Errorf("timed out: %d %q", res.code, res.body)
	}
	if now := r.Held(); len(now) != 0 {
		t.Errorf("still held after its time: %+v", now)
	}

	r2, _, c2 := heldRelay(t, h, time.Minute)
	dir2 := r2.HoldDir
	if err := MarkWatched(dir2, ""); err != nil {
		t.Fatal(err)
	}
	ch := send(t, c2, "POST", "/gone", "")
	waitHeld(t, dir2, 1)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir2, HeldDir, watchedName), old, old); err != nil {
		t.Fatal(err)
	}
	if r := await(t, ch); r.code != 403 || !strings.Contains(r.body, "watch stopped") {
		t.Errorf("watch gone: %d %q", r.code, r.body)
	}

	r3, log3, c3 := heldRelay(t, h, time.Minute)
	dir3 := r3.HoldDir
	keepWatched(t, dir3)
	for _, mp := range [][2]string{{"PUT+POST", "/x"}, {"*", "/x"}, {"PUT", "/a%2Fb"}, {"PUT", "/a,b"}} {
		if r := await(t, send(t, c3, mp[0], mp[1], "")); r.code != 403 {
			t.Errorf("%s %s: %d %q", mp[0], mp[1], r.code, r.body)
		}
	}
	if held, _ := HeldRequests(dir3); len(held) != 0 {
		t.Errorf("held what no rule can name: %+v", held)
	}
	// The log keeps the path as sent, escaped (what a rule matches), not decoded.
	if uses, _ := log3.Uses(); len(uses) != 4 || uses[2].Path != "/a%2Fb" || !uses[2].Refused {
		t.Errorf("the log of the refusals: %+v", uses)
	}
	var chans []<-chan result
	for range MaxHeld {
		chans = append(chans, send(t, c3, "PATCH", "/many", ""))
	}
	held := waitHeld(t, dir3, MaxHeld)
	if r := await(t, send(t, c3, "PATCH", "/one-more", "")); r.code != 403 || strings.Contains(r.body, "was asked") {
		t.Errorf("beyond %d held: %d %q, want refused at once", MaxHeld, r.code, r.body)
	}
	for _, hr := range held {
		if err := DecideHeld(dir3, hr.ID, netpolicy.DecisionDeny); err != nil {
			t.Error(err)
		}
	}
	for _, ch := range chans {
		if r := await(t, ch); r.code != 403 {
			t.Errorf("denied: %d %q", r.code, r.body)
		}
	}
	if n := len(h.requests(unboundHost)); n != 0 {
		t.Errorf("the server got %d requests", n)
	}
}

// TestDecideHeldRefusesWhatIsNotAnID: a decision names a held request by the relay's id only;
// anything else (a path, a guest id, a name with a separator) is refused and writes nothing.
func TestDecideHeldRefusesWhatIsNotAnID(t *testing.T) {
	dir := t.TempDir()
	if err := MarkWatched(dir, ""); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", "0123456789abcdef", "relay-", "relay-0123456789ABCDEF", "relay-0123456789abcde", "relay-../../x", "relay-0123456789abcdef/../w", "relay-0123456789abcdef0"} {
		if CheckHeldID(id) {
			t.Errorf("CheckHeldID(%q)", id)
		}
		if err := DecideHeld(dir, id, netpolicy.DecisionOnce); err == nil {
			t.Errorf("DecideHeld(%q) took it", id)
		}
	}
	if err := DecideHeld(dir, "relay-0123456789abcdef", "always"); err == nil {
		t.Error("a decision that is neither once nor deny was taken")
	}
	names, _ := os.ReadDir(filepath.Join(dir, HeldDir))
	if len(names) != 1 {
		t.Errorf("the held directory holds %v, want the marker alone", names)
	}
}

// TestRelayUnwatchEndsTheHoldAtOnce: two named watches of the session; the first stopping
// cleanly (Unwatch) leaves the held request to the second; the last stopping refuses it at
// once ("watch stopped", not netpolicy.WatchedFresh later), and the next refused request is
// refused at once; a killed watch's marker goes stale and the next mark removes it.
func TestRelayUnwatchEndsTheHoldAtOnce(t *testing.T) {
	h := newHarness(t)
	r, _, c := heldRelay(t, h, time.Minute)
	dir := r.HoldDir
	a, b := netpolicy.NewHeldID(), netpolicy.NewHeldID()
	for _, w := range []string{a, b} {
		if err := MarkWatched(dir, w); err != nil {
			t.Fatal(err)
		}
	}
	ch := send(t, c, "POST", "/held", "")
	waitHeld(t, dir, 1)
	if err := Unwatch(dir, a); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * holdPoll)
	select {
	case res := <-ch:
		t.Fatalf("one of two watches stopped: the held request ended: %d %q", res.code, res.body)
	default:
	}
	// Marked again just before it stops: a marker left behind would hold for WatchedFresh more.
	if err := MarkWatched(dir, b); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := Unwatch(dir, b); err != nil {
		t.Fatal(err)
	}
	if res := await(t, ch); res.code != 403 || !strings.Contains(res.body, "watch stopped") {
		t.Errorf("the last watch stopped: %d %q", res.code, res.body)
	}
	if d := time.Since(t0); d >= watchedFresh/2 {
		t.Errorf("the held request was refused %s after the last watch stopped", d)
	}
	if res := await(t, send(t, c, "POST", "/next", "")); res.code != 403 || strings.Contains(res.body, "was asked") {
		t.Errorf("after the watches stopped: %d %q, want refused at once", res.code, res.body)
	}
	if err := Unwatch(dir, "../x"); err == nil {
		t.Error("Unwatch took a watcher that is not an id")
	}
	if err := MarkWatched(dir, "a/b"); err == nil {
		t.Error("MarkWatched took a watcher that is not an id")
	}
	if err := Unwatch(dir, a); err != nil {
		t.Errorf("Unwatch of a watch already gone: %v", err)
	}
	if err := Unwatch(t.TempDir(), a); err != nil {
		t.Errorf("Unwatch of a session never watched: %v", err)
	}
	if err := MarkWatched(dir, a); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(filepath.Join(dir, HeldDir, watchedName+"."+a), old, old); err != nil {
		t.Fatal(err)
	}
	if err := MarkWatched(dir, b); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, HeldDir, watchedName+"."+a)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the stale marker is still there: %v", err)
	}
}
