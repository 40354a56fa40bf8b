package agentconfig

import (
	"strings"
)

// Cursor.
//
// MCP servers (https://cursor.com/docs/mcp, checked 2026): .cursor/mcp.json in the project
// (project) or ~/.cursor/mcp.json (global), {"mcpServers": {NAME: {"command": ..., "args":
// [...]}}}; the editor and the Cursor CLI both read them.
//
// Built-in tools: the editor's own agent tools can only be switched off in its settings UI; its
// permissions.json (https://cursor.com/docs/reference/permissions) holds allowlists, not deny
// rules. The Cursor CLI (cursor-agent) does take deny rules
// (https://docs.cursor.com/en/cli/reference/permissions): "permissions": {"deny": [...]} in
// <project>/.cursor/cli.json or ~/.cursor/cli-config.json, with tokens Shell(commandBase),
// Read(pathOrGlob) and Write(pathOrGlob); "Relative paths are scoped to the current workspace",
// "Absolute paths can target files outside the project", and deny wins over allow.

// cursorCLIDenyRules deny the Cursor CLI's own tools every shell command and every file read and
// write: relative globs are scoped to the workspace, absolute ones reach the rest of the disk.
var cursorCLIDenyRules = []string{"Shell(*)", "Read(**)", "Write(**)", "Read(/**)", "Write(/**)"}

func planCursor(o Options) ([]Change, error) {
	mcp, err := planJSONFile(o.configPath(".cursor/mcp.json", ".cursor/mcp.json"), strictJSON, o.newFileMode(), stdioServerEdits(o, false)...)
	if err != nil {
		return nil, err
	}
	mcp.Summary = o.serverSummary()
	editorNote := "The Cursor editor's own agent tools cannot be turned off from a file; switch them off in Cursor's settings."
	cliPath := o.configPath(".cursor/cli.json", ".cursor/cli-config.json")
	if !o.DisableBuiltinTools {
		mcp.Notes = append(mcp.Notes, "Cursor's own file and shell tools stay available; "+
			"--disable-builtin-tools denies them to the Cursor CLI in "+cliPath+".", editorNote)
		return []Change{mcp}, nil
	}
	mcp.Notes = append(mcp.Notes, editorNote)
	deny, err := planJSONFile(cliPath, strictJSON, o.newFileMode(),
		addToJSONList{Path: []string{"permissions", "deny"}, Items: cursorCLIDenyRules})
	if err != nil {
		return nil, err
	}
	deny.Summary = "deny the Cursor CLI's own tools " + strings.Join(cursorCLIDenyRules, ", ")
	deny.Notes = append(deny.Notes, "These deny rules apply to the Cursor CLI (cursor-agent) only.")
	return []Change{mcp, deny}, nil
}
