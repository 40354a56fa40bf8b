package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// argSpec is what a tool takes: its arguments in their order, and the required ones.
type argSpec struct {
	names, required []string
}

// argSpecs are the tools' arguments by tool name, filled by add.
type argSpecs map[string]argSpec

// add registers the tool and records its arguments (the schema mcp.AddTool infers from In:
// mcp.AddTool keeps its copy of the tool to itself).
func add[In, Out any](server *mcp.Server, specs argSpecs, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	mcp.AddTool(server, t, h)
	s, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", t.Name, err)) // a programming error, as in mcp.AddTool
	}
	specs[t.Name] = argSpec{names: s.PropertyOrder, required: s.Required}
}

// takes words what tool takes: "write_file takes path, content", "read_file takes path, and
// optionally offset, limit", "list_checkpoints takes no arguments".
func (sp argSpec) takes(tool string) string {
	var req, opt []string
	for _, n := range sp.names {
		if slices.Contains(sp.required, n) {
			req = append(req, n)
		} else {
			opt = append(opt, n)
		}
	}
	switch {
	case len(req) == 0 && len(opt) == 0:
		return tool + " takes no arguments"
	case len(opt) == 0:
		return tool + " takes " + strings.Join(req, ", ")
	case len(req) == 0:
		return tool + " takes, all optional, " + strings.Join(opt, ", ")
	}
	return tool + " takes " + strings.Join(req, ", ") + ", and optionally " + strings.Join(opt, ", ")
}

// argHints words the errors of calls whose arguments are not what the tool takes, so that an
// agent can correct the call at once: the schemas and the go-sdk's validation stay as they are
// (Lima's), and its error text is kept at the end; before it come the unknown arguments with
// the closest argument the tool takes, the missing required ones, and what the tool takes.
// A command sent as one string gets the array to send instead.
func argHints(specs argSpecs) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			ctr, ok := req.(*mcp.CallToolRequest)
			if !ok || ctr.Params == nil {
				return next(ctx, method, req)
			}
			if res := commandAsString(ctr.Params); res != nil {
				return res, nil
			}
			res, err := next(ctx, method, req)
			spec, known := specs[ctr.Params.Name]
			ctres, isTool := res.(*mcp.CallToolResult)
			if err != nil || !known || !isTool || !ctres.IsError || len(ctres.Content) != 1 {
				return res, err
			}
			text, ok := ctres.Content[0].(*mcp.TextContent)
			// The go-sdk's words for arguments that do not match the schema (mcp/server.go).
			if !ok || !strings.HasPrefix(text.Text, `validating "arguments": `) {
				return res, err
			}
			var hint mcp.CallToolResult
			hint.SetError(errors.New(spec.explain(ctr.Params.Name, ctr.Params.Arguments) + " (" + text.Text + ")"))
			return &hint, nil
		}
	}
}

// explain words what is wrong with args for tool: "unknown argument file_path: did you mean
// path? write_file takes path, content".
func (sp argSpec) explain(tool string, raw json.RawMessage) string {
	var args map[string]json.RawMessage
	if len(raw) > 0 && json.Unmarshal(raw, &args) != nil {
		return "the arguments must be a JSON object: " + sp.takes(tool)
	}
	var unknown []string
	for k := range args {
		if !slices.Contains(sp.names, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	var parts []string
	const most = 8 // the error stays short whatever was sent
	if len(unknown) > most {
		parts = append(parts, fmt.Sprintf("%d unknown arguments", len(unknown)))
		unknown = unknown[:most]
	}
	for _, k := range unknown {
		p := "unknown argument " + quoteArg(k)
		if near := nearestArg(k, sp.names); near != "" {
			p += ": did you mean " + near + "?"
		}
		parts = append(parts, p)
	}
	var missing []string
	for _, r := range sp.required {
		if _, ok := args[r]; !ok {
			missing = append(missing, r)
		}
	}
	if len(missing) == 1 {
		parts = append(parts, "missing required argument "+missing[0])
	} else if len(missing) > 1 {
		parts = append(parts, "missing required arguments "+strings.Join(missing, ", "))
	}
	if len(parts) == 0 {
		parts = append(parts, "an argument has the wrong type or value")
	}
	out := strings.Join(parts, "; ")
	if !strings.HasSuffix(out, "?") {
		out += "."
	}
	return out + " " + sp.takes(tool)
}

// quoteArg is an argument's name as the agent sent it: bare when it is a plain name, quoted
// (and cut) otherwise.
func quoteArg(k string) string {
	plain := k != "" && len(k) <= 64
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			plain = false
		}
	}
	if plain {
		return k
	}
	if len(k) > 64 {
		k = k[:64] + "..."
	}
	return fmt.Sprintf("%q", k)
}

// argSynonyms are the names other tools (Gemini CLI, Claude Code, Lima's own replace) give the
// same argument; each group is tried in order against the arguments a tool takes.
var argSynonyms = [][]string{
	{"path", "file_path", "filepath", "file", "filename", "file_name", "absolute_path", "abs_path", "target_file", "dir_path", "directory"},
	{"directory", "dir", "cwd", "workdir", "working_directory", "work_dir", "path"},
	{"content", "contents", "text", "data", "body", "file_text"},
	{"old_string", "old_str", "old", "old_text", "search", "find"},
	{"new_string", "new_str", "new", "new_text", "replacement"},
	{"command", "cmd", "commands", "script", "args", "argv"},
	{"pattern", "regex", "regexp", "query", "glob"},
	{"timeout_seconds", "timeout", "timeout_sec", "timeout_secs"},
	{"id", "pid", "process_id", "bash_id", "shell_id", "checkpoint_id"},
	{"max_bytes", "limit", "bytes"},
	{"offset", "start_line", "line"},
}

// nearestArg is the argument of names the agent most likely meant by bad: the same name
// spelled another way (filePath for file_path), a synonym, a near spelling, or the one name
// bad contains or is contained in; "" when none is close. (Hand-written: a dozen names, no
// library kept for it.)
func nearestArg(bad string, names []string) string {
	nb := normArg(bad)
	for _, n := range names {
		if normArg(n) == nb {
			return n
		}
	}
	for _, group := range argSynonyms {
		if !slices.ContainsFunc(group, func(g string) bool { return normArg(g) == nb }) {
			continue
		}
		for _, g := range group {
			if slices.Contains(names, g) {
				return g
			}
		}
	}
	best, bestD := "", -1
	for _, n := range names {
		if d := editDistance(nb, normArg(n)); bestD < 0 || d < bestD {
			best, bestD = n, d
		}
	}
	if limit := min(2, len(nb)/3); bestD >= 0 && bestD <= limit {
		return best
	}
	var within []string
	for _, n := range names {
		if nn := normArg(n); len(nn) >= 2 && len(nb) >= 2 && (strings.Contains(nb, nn) || strings.Contains(nn, nb)) {
			within = append(within, n)
		}
	}
	if len(within) == 1 {
		return within[0]
	}
	return ""
}

// normArg is a name without case, '_' and '-' (filePath, file-path and file_path are one).
func normArg(s string) string {
	return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
}

// editDistance is the distance of a and b in edits of one byte, a swap of two adjacent ones
// counting as one edit (optimal string alignment; names of a few bytes).
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// commandAsString answers a run_shell_command call whose command is one string with the array
// to send instead, before the schema validation would answer with a dump of the schema; nil for
// any other call.
func commandAsString(p *mcp.CallToolParamsRaw) *mcp.CallToolResult {
	if p.Name != runShellCommandTool.Name {
		return nil
	}
	var args struct {
		Command json.RawMessage `json:"command"`
	}
	if json.Unmarshal(p.Arguments, &args) != nil || len(args.Command) == 0 || args.Command[0] != '"' {
		return nil
	}
	var cmd string
	_ = json.Unmarshal(args.Command, &cmd)
	var hint strings.Builder
	enc := json.NewEncoder(&hint)
	enc.SetEscapeHTML(false)
	_ = enc.Encode([]string{"bash", "-c", cmd})
	var res mcp.CallToolResult
	res.SetError(errors.New(`"command" must be an array of strings (the program and its arguments), not one string: to run a shell command line, send ` + strings.TrimSpace(hint.String())))
	return &res
}
