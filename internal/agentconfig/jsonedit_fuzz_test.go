package agentconfig

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzJSONEdit checks the parser against encoding/json and the edits against their meaning: an
// edited document decodes to the old one with the edit made to it.
func FuzzJSONEdit(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"mcpServers": {"a": {"command": "x"}}}`, "{\n  \"mcpServers\": {\n    \"lima\": {\"args\": []}\n  }\n}",
		`{"permissions": {"deny": ["Bash", 1, null]}}`, "// c\n{\"a\": /* x */ 1 // y\n}", `[]`, `{"a": 1,}`,
		"{\r\n\t\"tools\": {\"exclude\": [\r\n\t\t\"x\" // c\r\n\t]}\r\n}",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, src string, comments bool) {
		d, err := newJSONDoc([]byte(src), comments)
		if err != nil {
			return
		}
		if !json.Valid(stripJSONComments(d.src)) {
			t.Fatalf("parsed, but encoding/json rejects %q", src)
		}
		want, err := decodePlainJSON(d.src, comments)
		if err != nil {
			t.Fatal(err)
		}
		edits := []jsonEdit{
			setJSON{Path: []string{"mcpServers", "lima", "command"}, Value: "limactl"},
			setJSON{Path: []string{"mcpServers", "lima", "args"}, Value: []string{"mcp", "serve"}},
			addToJSONList{Path: []string{"permissions", "deny"}, Items: []string{"Bash", "Read"}},
		}
		for _, e := range edits {
			if err := e.editDoc(d); err != nil {
				return // a value in the way: refused
			}
			if err := e.editPlain(want.(map[string]any)); err != nil {
				t.Fatalf("the text edit worked but the plain one failed: %v", err)
			}
		}
		got, err := decodePlainJSON(d.src, comments)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("edit of %q gave %q (%v)", src, d.src, err)
		}
	})
}
