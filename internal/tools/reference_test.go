package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestWriteReference(t *testing.T) {
	f := false
	list := []*mcp.Tool{
		{Name: "zeta", Description: "uses ``` and **globs**", InputSchema: map[string]any{"type": "object"}},
		{
			Name: "alpha", Title: "Alpha | one", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &f},
			InputSchema:  map[string]any{"type": "object", "b": 1, "a": 2},
			OutputSchema: map[string]any{"type": "object"},
		},
	}
	var b bytes.Buffer
	if err := WriteReference(&b, list); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if list[0].Name != "zeta" {
		t.Error("WriteReference reordered its argument")
	}
	for _, want := range []string{
		"| [`alpha`](#alpha) | Alpha \\| one | yes | n/a | no | no |",
		// no annotations: the specification's defaults (destructive, open world)
		"| [`zeta`](#zeta) | zeta | no | yes | no | yes |",
		"````text\nuses ``` and **globs**\n````\n",
		"```json\n{\n  \"a\": 2,\n  \"b\": 1,\n  \"type\": \"object\"\n}\n```\n",
		"No output schema",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("reference lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "## alpha") > strings.Index(out, "## zeta") {
		t.Error("tools are not sorted by name")
	}
}

// Every real tool appears, with schemas that are valid JSON.
func TestWriteReferenceTools(t *testing.T) {
	list, err := List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteReference(&b, list); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, tool := range list {
		if !strings.Contains(out, "\n## "+tool.Name+"\n") {
			t.Errorf("no section for %s", tool.Name)
		}
	}
	for _, block := range strings.Split(out, "```json\n")[1:] {
		j, _, ok := strings.Cut(block, "\n```\n")
		if !ok || !json.Valid([]byte(j)) {
			t.Errorf("not a valid JSON block: %.200s", block)
		}
	}
}
