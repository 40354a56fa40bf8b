package enforce

import (
	"strings"
	"testing"
)

// The agent's environment has its own HOME, USER, LOGNAME and SHELL, and none of sudo's
// variables (SUDO_COMMAND would show the Lima user's command line).
func TestAgentEnv(t *testing.T) {
	env := agentEnv([]string{"PATH=/usr/bin:/bin", "TERM=xterm", "HOME=/root", "USER=root", "LOGNAME=root", "SHELL=/bin/sh",
		"MAIL=/var/mail/root", "SUDO_COMMAND=/x net as --user lmcp-a -- sh -c secret", "SUDO_USER=lima", "SUDO_UID=501", "SUDO_GID=1000"},
		agentUser{Name: "lmcp-a", UID: 1001, GID: 1001, Home: "/var/lib/limactl-mcp/agents/lmcp-a", Shell: "/bin/bash"})
	got := strings.Join(env, "\n")
	want := "PATH=/usr/bin:/bin\nTERM=xterm\nHOME=/var/lib/limactl-mcp/agents/lmcp-a\nUSER=lmcp-a\nLOGNAME=lmcp-a\nSHELL=/bin/bash"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// net as takes only an agent user limactl-mcp made.
func TestCheckAsUser(t *testing.T) {
	l := DefaultLayout()
	for _, name := range []string{"root", "lmcp-", "lmcp-A", "daemon", "lmcp-a;id"} {
		if _, err := checkAsUser(l, name); err == nil {
			t.Errorf("%q accepted", name)
		}
	}
	if _, err := checkAsUser(l, "lmcp-doesnotexist0"); err == nil {
		t.Error("a user that does not exist was accepted")
	}
}
