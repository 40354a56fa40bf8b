package agentconfig

import (
	"fmt"
	"strings"
)

// Claude Code.
//
// MCP servers (https://code.claude.com/docs/en/mcp, checked 2026): project scope is .mcp.json in
// the project root, {"mcpServers": {NAME: {"type": "stdio", "command": ..., "args": [...]}}},
// shared through version control; Claude Code asks each user to approve a project's servers
// before it starts them. User scope is the top-level "mcpServers" of ~/.claude.json (local scope
// is the same file's "projects"[PATH]."mcpServers", not written here).
//
// Built-in tools (https://code.claude.com/docs/en/tools-reference): "To disable a tool entirely,
// add its name to the deny array in your permission settings", i.e. "permissions": {"deny":
// [...]} in .claude/settings.json (project) or ~/.claude/settings.json (user)
// (https://code.claude.com/docs/en/settings). Its list of tools names Bash, Monitor (runs a
// command in the background) and PowerShell as the ones that run commands, Read, Write, Edit,
// NotebookEdit, Glob, Grep and LSP (a language server's view of the host's files) as the ones
// on files, and EnterWorktree, which makes a git worktree
// on the host and moves the session into it. Every name here is one the client has: "claude
// doctor" flags a deny rule that matches no tool (2.1.332 flags MultiEdit, gone from current
// versions), and test/e2e/clients_test.go runs it against what configure writes.

// claudeBuiltinTools are the Claude Code tools that run commands or touch files on the host.
var claudeBuiltinTools = []string{
	"Bash", "Monitor", "PowerShell",
	"Read", "Write", "Edit", "NotebookEdit",
	"Glob", "Grep", "LSP",
	"EnterWorktree",
}

func planClaude(o Options) ([]Change, error) {
	mcp, err := planJSONFile(o.configPath(".mcp.json", ".claude.json"), strictJSON, o.newFileMode(), stdioServerEdits(o, true)...)
	if err != nil {
		return nil, err
	}
	mcp.Summary = o.serverSummary()
	if o.User {
		mcp.Notes = append(mcp.Notes, "Claude Code rewrites ~/.claude.json while it runs: configure it while Claude Code is not running, "+
			"or check with \"claude mcp list\" that the server is still there.")
	} else {
		mcp.Notes = append(mcp.Notes, "Claude Code asks each user to approve the servers in a project's .mcp.json before it starts them. To approve: start `claude` in "+o.Workdir+" and accept the server (or set \"enableAllProjectMcpServers\": true in its .claude/settings.local.json); then `claude mcp list` shows it connected.")
	}
	settingsPath := o.configPath(".claude/settings.json", ".claude/settings.json")
	if !o.DisableBuiltinTools {
		mcp.Notes = append(mcp.Notes, fmt.Sprintf("Claude Code's own file and shell tools (Bash, Read, Edit, Write, ...) stay available; "+
			"--disable-builtin-tools denies them in %s.", settingsPath))
		return []Change{mcp}, nil
	}
	deny, err := planJSONFile(settingsPath, strictJSON, o.newFileMode(),
		addToJSONList{Path: []string{"permissions", "deny"}, Items: claudeBuiltinTools})
	if err != nil {
		return nil, err
	}
	deny.Summary = "deny Claude Code's built-in tools " + strings.Join(claudeBuiltinTools, ", ")
	deny.Notes = append(deny.Notes, "Claude Code's other built-in tools (WebFetch, WebSearch, Agent, ...) stay available.")
	return []Change{mcp, deny}, nil
}
