package tools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"
	"github.com/limactl-mcp/limactl-mcp/internal/tools"
	"github.com/limactl-mcp/limactl-mcp/internal/workspace"
)

// TestArgumentErrorsTeach: every tool answers a misspelt argument with the argument it takes
// (the closest), and a missing required one by name, saying what the tool takes, through a
// real go-sdk client; the go-sdk's own words stay at the end.
func TestArgumentErrorsTeach(t *testing.T) {
	// No guest: the arguments are refused before any handler runs.
	cs := serve(t, tools.New(nil, tools.Static{WS: workspace.Identity("/")}, tools.DefaultLimits, nil), nil)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		wrong, want string // a misspelt argument and the one it means
		takes       string
	}{
		"write_file":                {"file_path", "path", "write_file takes path, content"},
		"read_file":                 {"filePath", "path", "read_file takes path, and optionally offset, limit"},
		"replace":                   {"path", "file_path", "replace takes file_path, old_string, new_string, and optionally expected_replacements"},
		"list_directory":            {"dir_path", "path", "list_directory takes path"},
		"glob":                      {"patern", "pattern", "glob takes pattern, and optionally path"},
		"search_file_content":       {"regex", "pattern", "search_file_content takes pattern, and optionally path, include"},
		"run_shell_command":         {"cwd", "directory", "run_shell_command takes command, directory, and optionally"},
		"pending_changes":           {"paths", "path", "pending_changes takes, all optional, path"},
		"read_background_output":    {"process_id", "id", "read_background_output takes id, and optionally"},
		"list_background_processes": {"all", "", "list_background_processes takes no arguments"},
		"kill_background_process":   {"grace", "grace_seconds", "kill_background_process takes id, and optionally"},
		"checkpoint":                {"lable", "label", "checkpoint takes, all optional, label"},
		"list_checkpoints":          {"verbose", "", "list_checkpoints takes no arguments"},
		"restore_checkpoint":        {"checkpoint_id", "id", "restore_checkpoint takes id"},
	}
	for _, tool := range list.Tools {
		tc, ok := cases[tool.Name]
		if !ok {
			t.Errorf("tool %s has no case here: add one", tool.Name)
			continue
		}
		var schema struct {
			Properties map[string]struct {
				Type any `json:"type"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		b, _ := json.Marshal(tool.InputSchema)
		if err := json.Unmarshal(b, &schema); err != nil {
			t.Fatal(err)
		}
		t.Run(tool.Name, func(t *testing.T) {
			// Every required argument, well typed, and the misspelt one.
			args := map[string]any{tc.wrong: "x"}
			for _, name := range schema.Required {
				typ, _ := schema.Properties[name].Type.(string)
				if l, ok := schema.Properties[name].Type.([]any); ok { // ["null", "array"]
					for _, x := range l {
						if x != "null" {
							typ, _ = x.(string)
						}
					}
				}
				switch typ {
				case "integer", "number":
					args[name] = 1
				case "array":
					args[name] = []string{"true"}
				case "boolean":
					args[name] = false
				default:
					args[name] = "/x"
				}
			}
			wants := []string{"unknown argument " + tc.wrong, tc.takes, `validating "arguments": validating root: unexpected additional properties ["` + tc.wrong + `"]`}
			if tc.want != "" {
				wants = append(wants, "unknown argument "+tc.wrong+": did you mean "+tc.want+"?")
			}
			res := toolsuite.MustError(t, cs, tool.Name, args, wants...)
			if tc.want == "" && strings.Contains(res.Text, "did you mean") {
				t.Errorf("a suggestion where none is close: %s", res.Text)
			}
			if len(schema.Required) == 0 {
				return
			}
			res = toolsuite.MustError(t, cs, tool.Name, map[string]any{}, tc.takes, `validating "arguments": validating root: required: missing properties`)
			missing := "missing required argument " + schema.Required[0]
			if len(schema.Required) > 1 {
				missing = "missing required arguments " + strings.Join(schema.Required, ", ")
			}
			if !strings.Contains(res.Text, missing) {
				t.Errorf("%s: want %q in %s", tool.Name, missing, res.Text)
			}
		})
	}
}

// A wrong type is worded by the go-sdk, with what the tool takes.
func TestArgumentTypeErrorSaysWhatTheToolTakes(t *testing.T) {
	cs := serve(t, tools.New(nil, tools.Static{WS: workspace.Identity("/")}, tools.DefaultLimits, nil), nil)
	toolsuite.MustError(t, cs, "read_file", map[string]any{"path": "/x", "offset": "ten"},
		"an argument has the wrong type or value. read_file takes path, and optionally offset, limit", `validating "arguments"`)
	// The command sent as one string keeps its own answer.
	toolsuite.MustError(t, cs, "run_shell_command", map[string]any{"command": "ls -l", "directory": "/"},
		`"command" must be an array of strings`, `["bash","-c","ls -l"]`)
}
