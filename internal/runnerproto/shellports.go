package runnerproto

// ShellMarkVar is the environment variable `limactl mcp shell` sets, to a mark of its own, in
// the command it runs in the guest: every process the command starts inherits it (unless it
// clears its environment), which is how the runner tells the command's processes from the
// others of the same user (a login shell, another session's agent, the tools' own servers).
const ShellMarkVar = "LIMACTL_MCP_SHELL"

// ShellPortsRequest lists the TCP sockets listened on by the processes whose environment
// holds ShellMarkVar=Mark (the previews of a `limactl mcp shell` command: its dev servers).
type ShellPortsRequest struct {
	// Mark is the command's mark: 16 to 64 lowercase hex digits.
	Mark string `json:"mark"`
}

// ShellPortsResult is what the runner's user can see of them: at most MaxBgPorts sockets.
type ShellPortsResult struct {
	Ports []BgPort `json:"ports,omitempty"`
}

// ValidShellMark says whether m can be a mark (so that it is found only where it was set).
func ValidShellMark(m string) bool {
	if len(m) < 16 || len(m) > 64 {
		return false
	}
	for _, c := range m {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
