package agentconfig

import (
	"os"
	"path/filepath"
	"strings"
)

// OpenCode.
//
// Config (https://opencode.ai/docs/config, https://opencode.ai/docs/mcp-servers; checked against
// the opencode-ai 1.18.33 npm package): opencode.json (or opencode.jsonc) in the project, found
// upwards from the working directory, and ~/.config/opencode/opencode.json ($XDG_CONFIG_HOME,
// "opencode debug paths") for the user, read as JSON with comments. "opencode mcp add" writes the
// first of opencode.json, opencode.jsonc, .opencode/opencode.json, .opencode/opencode.jsonc that
// exists in the project (opencode.json if none), and so does this. MCP servers: "mcp": {NAME:
// {"type": "local", "command": [...], "enabled": true}}. A project's file needs no approval.
//
// Built-in tools (https://opencode.ai/docs/tools, https://opencode.ai/docs/permissions): the
// legacy "tools" booleans are deprecated since 1.1.1 in favour of "permission": {TOOL: "deny"}.
// 1.18.33 has bash, read, glob, grep, edit, write, apply_patch, lsp (experimental), task,
// webfetch, websearch, todowrite, question, skill and plan_exit ("opencode debug agent build"
// lists them with the permissions applied); "edit" governs edit, write and apply_patch. An
// MCP tool is named NAME_TOOL, so denying "read" leaves this server's read_file alone.

// opencodeDeniedPermissions are the permissions of OpenCode's tools that run commands on the host
// or read, search or change its files.
var opencodeDeniedPermissions = []string{"bash", "read", "edit", "glob", "grep", "lsp"}

func planOpenCode(o Options) ([]Change, error) {
	path := opencodeConfigPath(o)
	edits := serverEntryEdits([]string{"mcp", o.ServerName}, []string{"url"},
		keyValue{"type", "local"},
		keyValue{"command", append([]string{}, o.Command...)},
		keyValue{"enabled", true},
	)
	if o.DisableBuiltinTools {
		for _, p := range opencodeDeniedPermissions {
			edits = append(edits, setJSON{Path: []string{"permission", p}, Value: "deny"})
		}
	}
	c, err := planJSONFile(path, jsoncJSON, o.newFileMode(), edits...)
	if err != nil {
		return nil, err
	}
	c.Summary = o.serverSummary()
	c.Notes = append(c.Notes, "OpenCode needs no approval for the server; `opencode mcp list` shows whether it connects.")
	if o.DisableBuiltinTools {
		c.Summary += "; deny OpenCode's built-in tools " + strings.Join(opencodeDeniedPermissions, ", ")
		c.Notes = append(c.Notes,
			"OpenCode's file and shell tools are denied (\"permission\": bash, read, edit (also write and apply_patch), glob, grep, lsp).",
			"OpenCode's other built-in tools (webfetch, websearch, task, todowrite, skill, question) stay available.")
	} else {
		c.Notes = append(c.Notes, "OpenCode's own file and shell tools (bash, read, edit, write, ...) stay available; --disable-builtin-tools denies them in "+path+".")
	}
	return []Change{c}, nil
}

// opencodeConfigPath is the file "opencode mcp add" would write: the first config file that
// exists, else opencode.json.
func opencodeConfigPath(o Options) string {
	dir := filepath.Join(o.userConfigHome(), "opencode")
	names := []string{"opencode.json", "opencode.jsonc"}
	if !o.User {
		dir = o.Workdir
		names = append(names, filepath.Join(".opencode", "opencode.json"), filepath.Join(".opencode", "opencode.jsonc"))
	}
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			return filepath.Join(dir, n)
		}
	}
	return filepath.Join(dir, names[0])
}
