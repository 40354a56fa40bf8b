package agentconfig

import (
	"path/filepath"
	"strings"
)

// Zed.
//
// Context servers (https://zed.dev/docs/ai/mcp; the settings types in zed-industries/zed
// crates/settings_content/src/project.rs, ContextServerSettingsContent): "context_servers":
// {NAME: {"command": ..., "args": [...], "env": {...}}} in the project's .zed/settings.json or
// the user's settings.json (crates/paths: ~/.config/zed on macOS, $XDG_CONFIG_HOME/zed on Linux,
// %APPDATA%\Zed on Windows), read as JSON with comments. The older form {"command": {"path": ...,
// "args": [...]}} is rewritten into this one. A project starts in Restricted Mode and its context
// servers run only once the user trusts it (https://zed.dev/docs/worktree-trust).
//
// Built-in tools (https://zed.dev/docs/ai/agent-profiles, https://zed.dev/docs/ai/tools): an agent
// profile, "agent": {"profiles": {ID: {"name": ..., "tools": {TOOL: bool}, "enable_all_context_servers":
// bool}}, "default_profile": ID}, decides which tools the Zed Agent has; a tool a profile does not
// enable is off (the built-in "minimal" profile is "tools": {}). Profiles are user settings only:
// a project's settings file holds ProjectSettingsContent, which has no "agent".

// zedHostTools are the Zed Agent's tools that run commands on the host or read, search or change
// its files (the "write" profile in assets/settings/default.json lists them all).
var zedHostTools = []string{
	"terminal",
	"read_file", "list_directory", "find_path", "grep", "diagnostics", "open",
	"edit_file", "save_file", "restore_file_from_disk", "copy_path", "move_path", "delete_path", "create_directory",
}

func planZed(o Options) ([]Change, error) {
	edits := serverEntryEdits([]string{"context_servers", o.ServerName}, []string{"url"},
		keyValue{"command", o.Command[0]},
		keyValue{"args", append([]string{}, o.Command[1:]...)},
	)
	profile := []string{"agent", "profiles", o.ServerName}
	if o.User && o.DisableBuiltinTools {
		edits = append(edits, setJSON{Path: childPath(profile, "name"), Value: zedProfileName(o)})
		for _, t := range zedHostTools {
			edits = append(edits, setJSON{Path: childPath(profile, "tools", t), Value: false})
		}
		edits = append(edits,
			setJSON{Path: childPath(profile, "enable_all_context_servers"), Value: true},
			setJSON{Path: []string{"agent", "default_profile"}, Value: o.ServerName})
	}
	c, err := planJSONFile(o.zedSettingsPath(), jsoncJSON, o.newFileMode(), edits...)
	if err != nil {
		return nil, err
	}
	c.Summary = o.serverSummary()
	if !o.User {
		c.Notes = append(c.Notes, "Zed runs a project's context servers only once you trust the project: click the exclamation mark in Zed's title bar (or run \"workspace: toggle worktree security\") and trust it.")
	}
	switch {
	case o.User && o.DisableBuiltinTools:
		c.Summary += "; a Zed Agent profile without Zed's file and shell tools"
		c.Notes = append(c.Notes,
			"The Zed Agent's default profile is now \""+o.ServerName+"\": Zed's file and shell tools ("+strings.Join(zedHostTools, ", ")+") are off in it and every context server's tools are on; pick another profile in the Agent Panel to get them back.",
			"The profile has no other built-in tools (fetch, web_search, ...); add them with \"agent: manage profiles\".")
	case o.DisableBuiltinTools:
		c.Notes = append(c.Notes, "Zed reads agent profiles from your user settings only, so its own file and shell tools cannot be turned off from the project: "+
			"`limactl mcp configure zed --user --disable-builtin-tools` adds a profile without them, or make one with \"agent: manage profiles\".")
	default:
		c.Notes = append(c.Notes, "The Zed Agent's own file and shell tools (terminal, edit_file, read_file, ...) stay available; with --user, --disable-builtin-tools adds an agent profile without them.")
	}
	return []Change{c}, nil
}

func zedProfileName(o Options) string {
	if o.ServerName == "lima" {
		return "Lima VM"
	}
	return "Lima VM (" + o.ServerName + ")"
}

// zedSettingsPath is .zed/settings.json, or the user's settings.json with User.
func (o Options) zedSettingsPath() string {
	if !o.User {
		return filepath.Join(o.Workdir, ".zed", "settings.json")
	}
	switch goos {
	case "darwin":
		return filepath.Join(o.HomeDir, ".config", "zed", "settings.json")
	case "windows":
		return filepath.Join(o.roamingAppData(), "Zed", "settings.json")
	default:
		return filepath.Join(o.userConfigHome(), "zed", "settings.json")
	}
}
