package netpolicy

// AgentHomeBase is where a real guest keeps the agent users' home directories: the host
// places a new session's copy there before the guest makes the user (enforce.DefaultLayout).
const AgentHomeBase = "/var/lib/limactl-mcp/agents"
