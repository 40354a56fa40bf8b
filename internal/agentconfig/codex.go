package agentconfig

import (
	"fmt"
)

// Codex.
//
// Config (https://developers.openai.com/codex/config-reference, checked 2026): "User-level
// configuration lives in ~/.codex/config.toml. You can also add project-scoped overrides in
// .codex/config.toml files. Codex loads project-scoped config files only when you trust the
// project." MCP servers are [mcp_servers.NAME] tables with command and args
// (https://developers.openai.com/codex/mcp); "codex mcp add" accepts names of letters, digits,
// '-' and '_' only (codex-rs/cli/src/mcp_cmd.rs, validate_server_name).
//
// Built-in tools: [features] shell_tool = false removes Codex's shell tool, unified exec included
// ("--disable shell_tool ... is useful for MCP-only operation", openai/codex#6481; the shell type
// is Disabled before any other choice in codex-rs tool_config.rs). [features] view_image = false
// removes view_image, which reads an image from the host's disk ("codex features list" shows
// both flags as set; test/e2e/clients_test.go checks it with the real client). There is no
// setting that removes apply_patch, its file-editing tool, for every model: a model whose Codex
// profile declares an apply_patch tool type gets it whatever features.apply_patch_freeform says.

func planCodex(o Options) ([]Change, error) {
	if !bareTOMLKey.MatchString(o.ServerName) {
		return nil, fmt.Errorf("invalid server name %q for Codex: use letters, digits, '-' and '_'", o.ServerName)
	}
	table := []string{"mcp_servers", o.ServerName}
	sets := []setTOML{
		{Table: table, Key: "command", Value: o.Command[0]},
		{Table: table, Key: "args", Value: append([]string{}, o.Command[1:]...)},
	}
	if o.DisableBuiltinTools {
		sets = append(sets,
			setTOML{Table: []string{"features"}, Key: "shell_tool", Value: false},
			setTOML{Table: []string{"features"}, Key: "view_image", Value: false})
	}
	c, err := planTOMLFile(o.configPath(".codex/config.toml", ".codex/config.toml"), o.newFileMode(), sets...)
	if err != nil {
		return nil, err
	}
	c.Summary = o.serverSummary()
	if !o.User {
		c.Notes = append(c.Notes, "Codex reads a project's .codex/config.toml only when you trust the project. To trust it: start `codex` in "+o.Workdir+" and accept \"trust this folder\" (Codex records it in ~/.codex/config.toml as [projects.\"DIR\"] trust_level = \"trusted\"); then `codex mcp list` shows the server.")
	}
	if o.DisableBuiltinTools {
		c.Summary += "; turn off Codex's shell and view_image tools"
		c.Notes = append(c.Notes,
			"Codex's shell tool and its view_image tool (host image files) are off (features.shell_tool = false, features.view_image = false).",
			"Codex cannot turn off its built-in apply_patch file-editing tool: models that use it always get it, and its edits go to the host's files, not the VM.")
	} else {
		c.Notes = append(c.Notes, "Codex's own shell, view_image and apply_patch tools stay available; --disable-builtin-tools turns off its shell and view_image tools (apply_patch cannot be turned off).")
	}
	return []Change{c}, nil
}
