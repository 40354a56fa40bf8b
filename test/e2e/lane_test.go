//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestFastLaneOnTheVM: serve's runner opens its fast lane (runnerproto/lane.go) to the host
// through the VM's NAT: in the guest, a runner holds a new established connection to the
// host's address once serve has answered a file tool, serve's stderr says the lane is open
// (--debug), and the file tools answer.
func TestFastLaneOnTheVM(t *testing.T) {
	ip := strings.TrimSpace(guestShell(t, "getent hosts host.lima.internal | awk '{print $1; exit}'"))
	if ip == "" {
		t.Fatal("the guest does not resolve host.lima.internal")
	}
	// The runners' established connections to the host, by their line (its local port):
	// those of other processes (the network proxy's to a relay) may come and go meanwhile.
	lanes := func() map[string]bool {
		out := guestShell(t, "sudo ss -tnHp state established dst "+ip+" || true")
		set := map[string]bool{}
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "runner-") {
				set[strings.Join(strings.Fields(line), " ")] = true
			}
		}
		return set
	}
	before := lanes()
	newLane := func() bool {
		for line := range lanes() {
			if !before[line] {
				return true
			}
		}
		return false
	}
	s := startServer(t, nil, "limactl-mcp", "serve", "--debug", instanceName)
	deadline := time.Now().Add(time.Minute)
	for {
		if res, text := callTool(t, s.Session, "list_directory", map[string]any{"path": "/"}); res.IsError {
			t.Fatalf("list_directory(/): %s", text)
		}
		if newLane() && strings.Contains(s.Stderr.String(), "fast lane open") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fast lane after a minute: runner connections to %s %v (before: %v)\nserve's stderr:\n%s", ip, lanes(), before, s.Stderr.String())
		}
		time.Sleep(time.Second)
	}
	if res, text := callTool(t, s.Session, "list_directory", map[string]any{"path": "/"}); res.IsError || !strings.Contains(text, "etc") {
		t.Fatalf("list_directory(/) on the lane: %s", text)
	}
}
