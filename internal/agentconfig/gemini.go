package agentconfig

import (
	"fmt"
	"slices"
	"strings"
)

// Gemini CLI.
//
// Settings (docs/reference/configuration.md in google-gemini/gemini-cli, and
// https://geminicli.com/docs/cli/configuration): .gemini/settings.json in the project root
// (project) and ~/.gemini/settings.json (user), read as JSON with comments (strip-json-comments,
// then JSON.parse, in packages/cli/src/config/settings.ts). A project's file is ignored unless
// the folder is trusted (docs/cli/trusted-folders.md). MCP servers: "mcpServers": {NAME:
// {"command": ..., "args": [...]}}; the docs warn against "_" in NAME, because the policy engine
// splits the tool name mcp_NAME_TOOL at the first underscore.
//
// Built-in tools: the nested settings format (v0.3.0 on) has "tools": {"exclude": [...]} ("Tool
// names to exclude from discovery"; the flat "excludeTools" is the old format). The docs mark it
// deprecated in favour of policy-engine deny rules, but both end up in the same exclusion set,
// and ToolRegistry.isActiveTool (packages/core/src/tools/tool-registry.ts) also drops an MCP tool
// whose unqualified name is in that set. The tools of "limactl mcp serve" carry Gemini CLI's own
// names (read_file, run_shell_command, ...), so excluding "read_file" would hide them too.
// isActiveTool also matches a built-in tool's class name, which MCP tools (all of class
// DiscoveredMCPTool) never have, and the docs use class names in tools.core/tools.exclude
// ("ReadFileTool", "ShellTool(ls)", docs/cli/enterprise.md): so the built-ins are excluded by
// class name. Workspace policy files are not in force yet (docs/reference/policy-engine.md).

// geminiBuiltinToolClasses are the classes of Gemini CLI's shell, file and search tools:
// run_shell_command, read_file, read_many_files, write_file, replace, glob, grep_search (GrepTool,
// or RipGrepTool when ripgrep is found) and list_directory.
var geminiBuiltinToolClasses = []string{
	"ShellTool",
	"ReadFileTool", "ReadManyFilesTool", "WriteFileTool", "EditTool",
	"GlobTool", "GrepTool", "RipGrepTool", "LSTool",
}

func planGemini(o Options) ([]Change, error) {
	edits := stdioServerEdits(o, false)
	if o.DisableBuiltinTools {
		edits = append(edits, addToJSONList{Path: []string{"tools", "exclude"}, Items: geminiBuiltinToolClasses})
	}
	c, err := planJSONFile(o.configPath(".gemini/settings.json", ".gemini/settings.json"), jsoncJSON, o.newFileMode(), edits...)
	if err != nil {
		return nil, err
	}
	c.Summary = o.serverSummary()
	if !o.User {
		c.Notes = append(c.Notes, "Gemini CLI reads a project's .gemini/settings.json only in a folder it trusts. To trust it: start `gemini` in "+o.Workdir+" and choose \"Trust folder\" (or run /permissions there); then `gemini mcp list` shows the server connected.")
	}
	if strings.Contains(o.ServerName, "_") {
		c.Notes = append(c.Notes, fmt.Sprintf("Gemini CLI advises against \"_\" in server names (%q): its policy rules split mcp_NAME_TOOL at the first underscore.", o.ServerName))
	}
	if o.DisableBuiltinTools {
		c.Summary += "; exclude Gemini CLI's built-in file and shell tools"
		c.Notes = append(c.Notes,
			"Gemini CLI's built-in file and shell tools are excluded by class name ("+strings.Join(geminiBuiltinToolClasses, ", ")+
				"): Gemini CLI also hides an MCP tool whose own name is excluded, and this server's tools share the built-ins' names (read_file, run_shell_command, ...).",
			"Gemini CLI's other built-in tools (web_fetch, google_web_search, write_todos, ...) stay available.",
			"Gemini CLI warns at start that tools.exclude is deprecated and \"will be removed in 1.0\" in favour of its policy engine, whose project-level policy files it does not read yet. Until then tools.exclude is the setting that works; after upgrading Gemini CLI, rerun this command and check `gemini mcp list`: if the built-ins come back, this note will say how to turn them off.")
	} else {
		c.Notes = append(c.Notes, "Gemini CLI's own file and shell tools (read_file, write_file, run_shell_command, ...) stay available; --disable-builtin-tools excludes them.")
	}
	if settings, err := decodePlainJSON(c.After, true); err == nil {
		c.Notes = append(c.Notes, geminiServerListNotes(settings.(map[string]any), o.ServerName)...)
	}
	return []Change{c}, nil
}

// geminiServerListNotes warns when mcp.allowed, mcp.excluded or tools.core in the same file keep
// the server's tools from being used (tools.core adds a deny-everything-else policy rule,
// packages/core/src/policy/config.ts), and when the file still holds the old flat excludeTools.
func geminiServerListNotes(settings map[string]any, name string) []string {
	var notes []string
	mcp, _ := settings["mcp"].(map[string]any)
	if allowed, ok := mcp["allowed"].([]any); ok && !slices.Contains(allowed, any(name)) && !slices.Contains(allowed, any("*")) {
		notes = append(notes, fmt.Sprintf("This file's mcp.allowed does not list %q, so Gemini CLI will not connect to it; add it there.", name))
	}
	if excluded, ok := mcp["excluded"].([]any); ok && slices.Contains(excluded, any(name)) {
		notes = append(notes, fmt.Sprintf("This file's mcp.excluded lists %q, so Gemini CLI will not connect to it; remove it there.", name))
	}
	if tools, _ := settings["tools"].(map[string]any); tools["core"] != nil {
		notes = append(notes, "This file sets tools.core: Gemini CLI then denies every tool that list does not name, MCP tools included.")
	}
	if _, ok := settings["excludeTools"]; ok {
		notes = append(notes, "This file also has the old flat \"excludeTools\" setting; current Gemini CLI reads tools.exclude.")
	}
	return notes
}
