//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A live change of a running session's policy (issue 26): `limactl mcp network INSTANCE allow`
// while the agent's command is being refused and retried lets the retry through, with no restart
// of the server or the agent; host:port rules hold; deny takes an entry away; open is refused
// with the restart to do; show lists the changes.
func TestNetworkLiveChange(t *testing.T) {
	port := hostServer(t)
	const marker = "# limactl-mcp-e2e-live"
	line := "$(getent hosts host.lima.internal | awk '{print $1; exit}') live-a.test live-b.test " + marker
	guestShell(t, `grep -q '`+marker+`' /etc/hosts || echo "`+line+`" | sudo tee -a /etc/hosts >/dev/null`)
	t.Cleanup(func() { guestShell(t, `sudo sed -i '/`+marker+`$/d' /etc/hosts`) })
	dir := homeWorkdir(t)
	urlA := fmt.Sprintf("http://live-a.test:%d/a", port)
	urlB := fmt.Sprintf("http://live-b.test:%d/b", port)

	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName, "--network=allow:live-a.test")
	discardOnCleanup(t, dir)

	t.Run("refused, and the error says what the person runs", func(t *testing.T) {
		out, _, text := runShell(t, s, "curl -fsS --max-time 20 "+urlA+"; echo; curl -fsS --max-time 20 "+urlB)
		if !strings.HasPrefix(out.Stdout, "hello a") || out.ExitCode == nil || *out.ExitCode == 0 {
			t.Fatalf("under allow:live-a.test: %s", text)
		}
		if !strings.Contains(out.Error, "limactl mcp network INSTANCE allow HOST:PORT") {
			t.Errorf("the refusal's note does not say how to allow it live: %s", text)
		}
	})

	t.Run("allow while the command is refused and retried", func(t *testing.T) {
		// The agent retries every second, writing each refusal to a file in its copy; the person
		// allows the host once a refusal was seen.
		retry := `n=0; while [ $n -lt 300 ]; do n=$((n+1)); if out=$(curl -fsS --max-time 20 ` + urlB + ` 2>&1); then echo "$out after $n tries"; exit 0; fi; echo $n > .refused; sleep 1; done; exit 1`
		type answer struct {
			m       map[string]any
			problem string
		}
		done := make(chan answer, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			m, problem := callChecked(ctx, s.Session, "run_shell_command", map[string]any{"command": []string{"bash", "-c", retry}, "directory": s.Dir})
			done <- answer{m, problem}
		}()
		refused := false
		for i := 0; i < 240 && !refused; i++ {
			refused = strings.TrimSpace(guestShell(t, "sudo -n cat "+shq(dir+"/.refused")+" 2>/dev/null || true")) != ""
			if !refused {
				time.Sleep(time.Second)
			}
		}
		if !refused {
			t.Fatal("the retrying command was never refused")
		}
		t0 := time.Now()
		text, stderr, code := plugin(t, dir, "network", instanceName, "allow", fmt.Sprintf("live-b.test:%d", port))
		took := time.Since(t0)
		if code != 0 || !strings.Contains(text, fmt.Sprintf("allow:live-a.test,live-b.test:%d (was allow:live-a.test): in force now", port)) {
			t.Fatalf("network allow: exit %d\n%s%s", code, text, stderr)
		}
		t.Logf("network allow took %v (the limactl-mcp command: connect, net ensure, record)", took.Round(time.Millisecond))
		var a answer
		select {
		case a = <-done:
		case <-time.After(8 * time.Minute):
			t.Fatal("the retrying command did not end")
		}
		out, _ := a.m["stdout"].(string)
		if a.problem != "" || !strings.HasPrefix(out, "hello b after ") || strings.HasPrefix(out, "hello b after 1 tries") {
			t.Fatalf("the retry after the live allow: %s %v", a.problem, a.m)
		}
		t.Logf("the agent's retry: %s", strings.TrimSpace(out))
	})

	t.Run("the port of a host:port entry is honoured", func(t *testing.T) {
		other := fmt.Sprintf("http://live-b.test:%d/x", port+1)
		out, _, text := runShell(t, s, "curl -sS --max-time 20 "+urlB+"; echo; curl -sS --max-time 20 "+other)
		if !strings.HasPrefix(out.Stdout, "hello b\n") || !strings.Contains(out.Stdout, "is allowed on other ports only") {
			t.Fatalf("host:port: %s", text)
		}
	})

	t.Run("deny takes an entry away at once", func(t *testing.T) {
		text, stderr, code := plugin(t, dir, "network", instanceName, "deny", "live-a.test")
		if code != 0 || !strings.Contains(text, fmt.Sprintf("allow:live-b.test:%d (was allow:live-a.test,live-b.test:%d): in force now", port, port)) {
			t.Fatalf("network deny: exit %d\n%s%s", code, text, stderr)
		}
		out, _, text := runShell(t, s, "curl -sS --max-time 20 "+urlA+"; echo; curl -sS --max-time 20 "+urlB)
		if !strings.Contains(out.Stdout, "host live-a.test is not on the allowlist") || !strings.HasSuffix(out.Stdout, "hello b") {
			t.Fatalf("after deny: %s", text)
		}
	})

	t.Run("open is a restart, and show lists the changes", func(t *testing.T) {
		_, stderr, code := plugin(t, dir, "network", instanceName, "set", "open")
		if code == 0 || !strings.Contains(stderr, "limactl mcp serve --network=open") {
			t.Fatalf("set open: exit %d: %s", code, stderr)
		}
		text, stderr, code := plugin(t, dir, "network", instanceName, "show", "--json")
		var res struct {
			Policy  string `json:"policy"`
			Network struct {
				Changes []struct{ From, To string } `json:"changes"`
				Blocked int                         `json:"blocked"`
			} `json:"network"`
		}
		if code != 0 || json.Unmarshal([]byte(text), &res) != nil {
			t.Fatalf("show --json: exit %d\n%s%s", code, text, stderr)
		}
		var changes []string
		for _, c := range res.Network.Changes {
			changes = append(changes, c.From+" -> "+c.To)
		}
		want := fmt.Sprintf(" -> allow:live-a.test|allow:live-a.test -> allow:live-a.test,live-b.test:%d|allow:live-a.test,live-b.test:%d -> allow:live-b.test:%d", port, port, port)
		if res.Policy != fmt.Sprintf("allow:live-b.test:%d", port) || strings.Join(changes, "|") != want || res.Network.Blocked == 0 {
			t.Errorf("show --json: %+v\nchanges %q\nwant    %q", res, strings.Join(changes, "|"), want)
		}
	})
	s.Session.Close()
}
