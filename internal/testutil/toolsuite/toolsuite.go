// Package toolsuite is the behaviour every deployment of the MCP tools must show, run against
// a real guest: a real sshd (integration tests) or a real Lima VM (end-to-end tests). It holds
// every case of Lima's own MCP tests (hack/bats/tests/mcp.bats) and ours.
package toolsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Env is where the suite runs.
type Env struct {
	// Session is a connected client session of the server under test.
	Session *mcp.ClientSession
	// Scratch is an absolute guest directory the suite may use, writable by the guest user.
	Scratch string
	// Shell runs a bash script in the guest as the guest user and returns its stdout; it fails
	// the test on error.
	Shell func(t testing.TB, script string) string
	// ToolRoot is the server's working directory (glob and search default to it).
	ToolRoot string
	// NoRunner says the server runs each command in its own SSH session (--no-runner).
	NoRunner bool
}

// Result is a decoded tool result.
type Result struct {
	IsError    bool
	Text       string         // the first text content
	Structured map[string]any // structuredContent
	Raw        *mcp.CallToolResult
}

// brief renders arguments for a failure message, cutting long values.
func brief(args map[string]any) string {
	s := fmt.Sprint(args)
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// Call calls a tool and decodes its result; a protocol error fails the test.
func Call(t testing.TB, s *mcp.ClientSession, name string, args map[string]any) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%s): protocol error: %v", name, brief(args), err)
	}
	r := &Result{IsError: res.IsError, Raw: res}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			r.Text = tc.Text
			break
		}
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &r.Structured); err != nil {
			t.Fatalf("%s: structuredContent is not an object: %s", name, b)
		}
		// The same JSON is also the text content, as in Lima's server.
		var fromText map[string]any
		if err := json.Unmarshal([]byte(r.Text), &fromText); err != nil {
			t.Errorf("%s: text content is not the structured JSON: %q", name, r.Text)
		}
	}
	return r
}

// MustOK calls a tool that must succeed.
func MustOK(t testing.TB, s *mcp.ClientSession, name string, args map[string]any) *Result {
	t.Helper()
	r := Call(t, s, name, args)
	if r.IsError {
		t.Fatalf("%s(%s): unexpected error: %s", name, brief(args), r.Text)
	}
	return r
}

// MustError calls a tool that must fail with a message containing each of wants.
func MustError(t testing.TB, s *mcp.ClientSession, name string, args map[string]any, wants ...string) *Result {
	t.Helper()
	r := Call(t, s, name, args)
	if !r.IsError {
		t.Fatalf("%s(%s): want an error, got %s", name, brief(args), r.Text)
	}
	for _, w := range wants {
		if !strings.Contains(r.Text, w) {
			t.Errorf("%s(%s): error %q does not contain %q", name, brief(args), r.Text, w)
		}
	}
	return r
}

// Run runs every case.
func Run(t *testing.T, env Env) {
	t.Run("ListTools", func(t *testing.T) { testListTools(t, env) })
	t.Run("RunShellCommand", func(t *testing.T) { testRunShellCommand(t, env) })
	t.Run("ReadFile", func(t *testing.T) { testReadFile(t, env) })
	t.Run("WriteFile", func(t *testing.T) { testWriteFile(t, env) })
	t.Run("Replace", func(t *testing.T) { testReplace(t, env) })
	t.Run("ListDirectory", func(t *testing.T) { testListDirectory(t, env) })
	t.Run("Glob", func(t *testing.T) { testGlob(t, env) })
	t.Run("Search", func(t *testing.T) { testSearch(t, env) })
}
