//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The watch's screen in a real terminal deciding on the real VM's held connections (issue 26:
// "watch driven in tmux: allow once, allow for the session, deny, with the command completing
// or failing accordingly"). The agent's curl waits in the guest's proxy while the person reads
// the screen; o lets that one connection through (curl gets the host's answer), the next
// connection to the same host is held again and d refuses it (curl reads that the person was
// asked and refused it), a allows a third host for the session (the held curl goes through,
// and so does the next one, never held: the policy has it); once the watch quits, a refused
// connection is refused at once again.
func TestWatchTUIDecides(t *testing.T) {
	port := hostServer(t)
	testHostNames(t, "allowed.test", "once.test", "session.test")
	dir := homeWorkdir(t)
	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName, "--network=allow:allowed.test")
	discardOnCleanup(t, dir)
	// The session is set up before the watch starts (a watch of a session never started has
	// nothing to read).
	if out, _, text := runShell(t, s, fmt.Sprintf("curl -sS --max-time 20 http://allowed.test:%d/ok", port)); out.Stdout != "hello ok" {
		t.Fatalf("the allowed host: %s", text)
	}

	w := tmuxCommand(t, dir, 120, 30, vm.Command(ctxT(t, 10*time.Minute), "limactl-mcp", "watch", instanceName), nil, "; echo EXIT=$?; sleep 60")
	const wait = 2 * time.Minute
	w.WaitFor(wait, "policy: allow:allowed.test", "no blocked attempt (yet)")

	// curl runs as the agent's tool call, beside the screen: its result arrives once the person
	// has decided.
	curl := func(name string) <-chan shellResult {
		done := make(chan shellResult, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var out shellResult
			res, err := s.Session.CallTool(ctx, &mcp.CallToolParams{Name: "run_shell_command", Arguments: map[string]any{
				"command":   []string{"bash", "-c", fmt.Sprintf("curl -sS --max-time 120 http://%s:%d/%s", name, port, strings.TrimSuffix(name, ".test"))},
				"directory": dir,
			}})
			if err != nil {
				out.Error = err.Error()
			} else {
				_ = json.Unmarshal([]byte(firstText(res)), &out)
			}
			done <- out
		}()
		return done
	}
	result := func(done <-chan shellResult, what string) shellResult {
		t.Helper()
		select {
		case out := <-done:
			return out
		case <-time.After(3 * time.Minute):
			t.Fatalf("%s: the agent's curl did not end", what)
			return shellResult{}
		}
	}
	target := func(name string) string { return fmt.Sprintf("%s:%d", name, port) }

	// o: that one connection goes through; the policy is unchanged.
	done := curl("once.test")
	w.WaitFor(wait, "> HELD "+target("once.test"), "s left")
	w.Keys("o")
	w.WaitFor(wait, "allowed "+target("once.test")+" once: that connection goes through")
	if out := result(done, "allowed once"); out.Stdout != "hello once" {
		t.Errorf("allowed once: want the host's answer, got %+v", out)
	}

	// The next connection to it is held again; d refuses it now.
	t0 := time.Now()
	done = curl("once.test")
	w.WaitFor(wait, "> HELD "+target("once.test"))
	w.Keys("d")
	w.WaitFor(wait, "refused "+target("once.test")+": the agent reads that you were asked and refused it")
	out := result(done, "denied")
	t.Logf("held then denied: the curl ended after %s", time.Since(t0).Round(time.Millisecond))
	if !strings.Contains(out.Stdout, "the person watching this agent was asked and refused it") || strings.Contains(out.Stdout, "hello") {
		t.Errorf("denied: want the proxy's refusal saying the person refused it, got %+v", out)
	}

	// a: the destination is allowed for the session; the held connection goes through, and the
	// next one is never held.
	done = curl("session.test")
	w.WaitFor(wait, "> HELD "+target("session.test"))
	w.Keys("a")
	w.WaitFor(wait, "allowed "+target("session.test"), "policy: allow:allowed.test,"+target("session.test"))
	if out := result(done, "allowed for the session"); out.Stdout != "hello session" {
		t.Errorf("allowed for the session: want the host's answer, got %+v", out)
	}
	if out, _, text := runShell(t, s, fmt.Sprintf("curl -sS --max-time 20 http://%s/again", target("session.test"))); out.Stdout != "hello again" {
		t.Errorf("the next connection to the allowed destination: %s", text)
	}
	// Nothing is held any more (the screen reads the guest's record every second).
	for t1 := time.Now(); strings.Contains(w.Screen(), "HELD"); time.Sleep(500 * time.Millisecond) {
		if time.Since(t1) > time.Minute {
			t.Errorf("a connection is still held:\n%s", w.Screen())
			break
		}
	}
	w.Keys("q")
	w.WaitFor(wait, "EXIT=0")
	// A watch that quits takes its marker away: the agent's next refused connection is refused
	// at once, as when nobody watches, not held until the marker is stale.
	after, _, afterText := runShell(t, s, fmt.Sprintf("curl -sS --max-time 60 http://%s/after", target("once.test")))
	if !strings.Contains(after.Stdout, "not on the allowlist") || strings.Contains(after.Stdout, "was asked") {
		t.Errorf("right after the watch quit: want the plain refusal, got %s", afterText)
	}
	text, stderr, code := plugin(t, dir, "network", instanceName, "show", "--json")
	var show struct {
		Policy string `json:"policy"`
	}
	if code != 0 || json.Unmarshal([]byte(text), &show) != nil || show.Policy != "allow:allowed.test,"+target("session.test") {
		t.Errorf("the session's policy after the watch (o changes nothing, a adds one): exit %d\n%s%s", code, text, stderr)
	}
}
