package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// argHints answers a call whose arguments have a shape agents often get wrong with what to send
// instead, before the schema validation would answer with a dump of the schema. The schemas
// stay Lima's: this only words the error.
func argHints(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		ctr, ok := req.(*mcp.CallToolRequest)
		if !ok || ctr.Params == nil || ctr.Params.Name != runShellCommandTool.Name {
			return next(ctx, method, req)
		}
		var args struct {
			Command json.RawMessage `json:"command"`
		}
		if json.Unmarshal(ctr.Params.Arguments, &args) != nil || len(args.Command) == 0 || args.Command[0] != '"' {
			return next(ctx, method, req)
		}
		var cmd string
		_ = json.Unmarshal(args.Command, &cmd)
		var hint strings.Builder
		enc := json.NewEncoder(&hint)
		enc.SetEscapeHTML(false)
		_ = enc.Encode([]string{"bash", "-c", cmd})
		var res mcp.CallToolResult
		res.SetError(errors.New(`"command" must be an array of strings (the program and its arguments), not one string: to run a shell command line, send ` + strings.TrimSpace(hint.String())))
		return &res, nil
	}
}
