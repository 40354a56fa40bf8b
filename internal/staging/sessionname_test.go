package staging

import (
	"strings"
	"testing"
)

// The unnamed session keeps the ID it had before sessions had names; a named one has its own.
func TestSessionIDOf(t *testing.T) {
	if SessionIDOf("/p", "") != SessionID("/p") {
		t.Error("the unnamed session's ID changed")
	}
	ids := map[string]bool{SessionID("/p"): true}
	for _, wn := range [][2]string{{"/p", "a"}, {"/p", "b"}, {"/q", "a"}, {"/p/a", ""}} {
		id := SessionIDOf(wn[0], wn[1])
		if ids[id] || len(id) != 12 {
			t.Errorf("SessionIDOf(%q, %q) = %q: not a new 12-digit ID", wn[0], wn[1], id)
		}
		ids[id] = true
	}
	if SessionIDOf("/p/", "a") != SessionIDOf("/p", "a") {
		t.Error("the ID depends on how the path is spelled")
	}
}

func TestParseSessionName(t *testing.T) {
	for flag, want := range map[string]string{"": "", "default": "", "a": "a", "fix-bug_2": "fix-bug_2", "A1": "A1", strings.Repeat("x", 32): strings.Repeat("x", 32)} {
		if got, err := ParseSessionName(flag); err != nil || got != want {
			t.Errorf("ParseSessionName(%q) = %q, %v; want %q", flag, got, err, want)
		}
	}
	for _, bad := range []string{"-a", "_a", "a b", "a/b", "..", "a.b", "é", strings.Repeat("x", 33), "a\n"} {
		if _, err := ParseSessionName(bad); err == nil || !strings.Contains(err.Error(), "--session") {
			t.Errorf("ParseSessionName(%q): %v, want an error about --session", bad, err)
		}
	}
}

// A named session is relocated, even where the unnamed one keeps the host's path, and two
// sessions never share a guest path.
func TestSessionGuestPath(t *testing.T) {
	home := "/home/u.linux"
	if p, same := SessionGuestPath("/home/u/proj", "", home, "id0"); p != "/home/u/proj" || !same {
		t.Errorf("the unnamed session: %s %v", p, same)
	}
	a, same := SessionGuestPath("/home/u/proj", "a", home, "id1")
	if a != "/home/u.linux/limactl-mcp-staged/proj-a-id1" || same {
		t.Errorf("session a: %s %v", a, same)
	}
	if b, _ := SessionGuestPath("/home/u/proj", "b", home, "id2"); b == a {
		t.Errorf("sessions a and b share %s", a)
	}
}

// Under a network policy, a new named session is placed in its own agent user's home, which
// that user can reach (the Lima user's home, where an open one goes, it cannot).
func TestPlanNetworkNamedSession(t *testing.T) {
	p, err := PlanNetwork("/home/u/proj", "a", nil, "none")
	if err != nil {
		t.Fatal(err)
	}
	id := SessionIDOf("/home/u/proj", "a")
	if want := AgentHome(id) + "/limactl-mcp-staged/proj-a-" + id; p.GuestPath != want || p.Agent == nil || p.Agent.User != AgentUser(id) {
		t.Errorf("plan: guest path %s (want %s), agent %+v", p.GuestPath, want, p.Agent)
	}
	// An open named session, in the Lima user's home, cannot go under a policy in place: the
	// error names the session in the commands it suggests.
	st := &State{ID: id, Session: "a", Workdir: "/home/u/proj", GuestPath: "/home/u.linux/limactl-mcp-staged/proj-a-" + id}
	if _, err := PlanNetwork("/home/u/proj", "a", st, "none"); err == nil || !strings.Contains(err.Error(), "review --session a") {
		t.Errorf("an open named session under a policy: %v", err)
	}
}
