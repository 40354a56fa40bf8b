package agentconfig

import (
	"path/filepath"
)

// VS Code (GitHub Copilot's agent).
//
// MCP servers (https://code.visualstudio.com/docs/copilot/reference/mcp-configuration, "MCP
// configuration reference", checked 2026): .vscode/mcp.json in the workspace, or mcp.json in the
// user profile ("MCP: Open User Configuration"), {"servers": {NAME: {"type": "stdio", "command":
// ..., "args": [...]}}, "inputs": [...]}, read as JSON with comments. The default profile's
// mcp.json lies in VS Code's user data directory: ~/.config/Code/User ($XDG_CONFIG_HOME) on
// Linux, ~/Library/Application Support/Code/User on macOS, %APPDATA%\Code\User on Windows
// (src/vs/platform/environment/node/userDataPath.ts); other profiles and VS Code Insiders have
// their own. VS Code asks the user to confirm that they trust a server before it first starts it
// ("MCP: Reset Trust" forgets the answers).
//
// Built-in tools (https://code.visualstudio.com/docs/copilot/agents/agent-tools, "Use tools with
// agents"): there is no setting that removes the agent's own tools; they are chosen per request
// in the Chat view's tools picker (Configure Tools), or by the tools list of a custom agent or
// prompt file, which can name a server's tools as NAME/*.

func planVSCode(o Options) ([]Change, error) {
	c, err := planJSONFile(vscodeConfigPath(o), jsoncJSON, o.newFileMode(),
		serverEntryEdits([]string{"servers", o.ServerName}, []string{"url"},
			keyValue{"type", "stdio"},
			keyValue{"command", o.Command[0]},
			keyValue{"args", append([]string{}, o.Command[1:]...)},
		)...)
	if err != nil {
		return nil, err
	}
	c.Summary = o.serverSummary()
	if o.User {
		c.Notes = append(c.Notes, "This is the mcp.json of VS Code's default profile; in another profile or in VS Code Insiders, run \"MCP: Open User Configuration\" and add the same entry.")
	}
	c.Notes = append(c.Notes,
		"VS Code starts the server only once you confirm that you trust it: select Start above \""+o.ServerName+"\" in "+filepath.Base(filepath.Dir(c.Path))+"/mcp.json (or run \"MCP: List Servers\"), then Trust.",
		"GitHub Copilot's own agent tools (file edits, terminal commands, ...) cannot be turned off from mcp.json: in the Chat view, select Configure Tools and leave only the \""+o.ServerName+"\" tools checked, or use a custom agent whose tools list is [\""+o.ServerName+"/*\"].")
	return []Change{c}, nil
}

// vscodeConfigPath is .vscode/mcp.json, or the default profile's mcp.json with User.
func vscodeConfigPath(o Options) string {
	if !o.User {
		return filepath.Join(o.Workdir, ".vscode", "mcp.json")
	}
	var dir string
	switch goos {
	case "darwin":
		dir = filepath.Join(o.HomeDir, "Library", "Application Support")
	case "windows":
		dir = o.roamingAppData()
	default:
		dir = o.userConfigHome()
	}
	return filepath.Join(dir, "Code", "User", "mcp.json")
}
