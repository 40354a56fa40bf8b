package agentconfig

import (
	"strings"
	"testing"
)

func editJSON(t *testing.T, src string, comments bool, edits ...func(d *jsonDoc) error) string {
	t.Helper()
	d, err := newJSONDoc([]byte(src), comments)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	for _, e := range edits {
		if err := e(d); err != nil {
			t.Fatalf("edit: %v", err)
		}
	}
	return string(d.src)
}

func setOp(path string, v any) func(d *jsonDoc) error {
	return func(d *jsonDoc) error { return d.set(strings.Split(path, "."), v) }
}

func listOp(path string, items ...string) func(d *jsonDoc) error {
	return func(d *jsonDoc) error { return d.addToList(strings.Split(path, "."), items) }
}

func TestJSONEditLayout(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		comments bool
		edits    []func(d *jsonDoc) error
		want     string
	}{
		{
			name:  "empty object",
			src:   "{}",
			edits: []func(d *jsonDoc) error{setOp("a.b", "x")},
			want:  "{\n  \"a\": {\n    \"b\": \"x\"\n  }\n}",
		},
		{
			name:  "appends after the last member at its indentation",
			src:   "{\n    \"z\": 1,\n    \"y\": [1, 2]\n}\n",
			edits: []func(d *jsonDoc) error{setOp("a", []string{"p", "q"})},
			want:  "{\n    \"z\": 1,\n    \"y\": [1, 2],\n    \"a\": [\n        \"p\",\n        \"q\"\n    ]\n}\n",
		},
		{
			name:  "tabs",
			src:   "{\n\t\"z\": {\n\t\t\"k\": true\n\t}\n}",
			edits: []func(d *jsonDoc) error{setOp("z.n", "v")},
			want:  "{\n\t\"z\": {\n\t\t\"k\": true,\n\t\t\"n\": \"v\"\n\t}\n}",
		},
		{
			name:  "inline object stays inline",
			src:   `{"s": {"a": {"command": "x"}}}`,
			edits: []func(d *jsonDoc) error{setOp("s.b", orderedObject{{"command", "y"}, {"args", []string{"1"}}})},
			want:  `{"s": {"a": {"command": "x"}, "b": {"command": "y", "args": ["1"]}}}`,
		},
		{
			name:  "replaces a different value only",
			src:   "{\n  \"a\": \"old\", \"keep\": 1.50\n}",
			edits: []func(d *jsonDoc) error{setOp("a", "new"), setOp("keep", nil)},
			want:  "{\n  \"a\": \"new\", \"keep\": null\n}",
		},
		{
			name:  "an inline list is replaced inline, a scalar by a laid-out list",
			src:   "{\n  \"a\": [\"x\"],\n  \"b\": null\n}",
			edits: []func(d *jsonDoc) error{setOp("a", []string{"y", "z"}), setOp("b", []string{"y"})},
			want:  "{\n  \"a\": [\"y\", \"z\"],\n  \"b\": [\n    \"y\"\n  ]\n}",
		},
		{
			name:  "equal value untouched",
			src:   "{\"a\" : [ \"x\" ,\"y\" ]}",
			edits: []func(d *jsonDoc) error{setOp("a", []string{"x", "y"})},
			want:  "{\"a\" : [ \"x\" ,\"y\" ]}",
		},
		{
			name:  "list gets only missing items",
			src:   "{\n  \"p\": {\n    \"deny\": [\n      \"Bash\",\n      \"Read(./.env)\"\n    ]\n  }\n}",
			edits: []func(d *jsonDoc) error{listOp("p.deny", "Bash", "Read", "Read")},
			want:  "{\n  \"p\": {\n    \"deny\": [\n      \"Bash\",\n      \"Read(./.env)\",\n      \"Read\"\n    ]\n  }\n}",
		},
		{
			name:  "empty list",
			src:   "{\n  \"deny\": []\n}",
			edits: []func(d *jsonDoc) error{listOp("deny", "A", "B")},
			want:  "{\n  \"deny\": [\n    \"A\",\n    \"B\"\n  ]\n}",
		},
		{
			name:  "inline list",
			src:   `{"deny": ["A"]}`,
			edits: []func(d *jsonDoc) error{listOp("deny", "A", "B")},
			want:  `{"deny": ["A", "B"]}`,
		},
		{
			name:     "comments are kept, the comma goes before a trailing comment",
			src:      "{\n  // servers\n  \"a\": 1, /* one */\n  \"b\": 2 // two\n}\n",
			comments: true,
			edits:    []func(d *jsonDoc) error{setOp("c", "x")},
			want:     "{\n  // servers\n  \"a\": 1, /* one */\n  \"b\": 2, // two\n  \"c\": \"x\"\n}\n",
		},
		{
			name:     "object holding only a comment",
			src:      "{ // nothing yet\n}",
			comments: true,
			edits:    []func(d *jsonDoc) error{setOp("c", "x")},
			want:     "{\n  \"c\": \"x\" // nothing yet\n}",
		},
		{
			name:  "CRLF line endings",
			src:   "{\r\n  \"a\": 1\r\n}\r\n",
			edits: []func(d *jsonDoc) error{setOp("b.c", "x")},
			want:  "{\r\n  \"a\": 1,\r\n  \"b\": {\r\n    \"c\": \"x\"\r\n  }\r\n}\r\n",
		},
		{
			name:  "duplicate keys: the last one counts, as in JSON.parse",
			src:   "{\"a\": {\"x\": 1}, \"a\": {\"y\": 2}}",
			edits: []func(d *jsonDoc) error{setOp("a.z", 3.0)},
			want:  "{\"a\": {\"x\": 1}, \"a\": {\"y\": 2, \"z\": 3}}",
		},
		{
			name:  "strings keep <, > and & and non-ASCII",
			src:   "{}",
			edits: []func(d *jsonDoc) error{setOp("a", "<&> é \"q\" \\")},
			want:  "{\n  \"a\": \"<&> é \\\"q\\\" \\\\\"\n}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := editJSON(t, tt.src, tt.comments, tt.edits...)
			if got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestJSONEditErrors(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		edit    func(d *jsonDoc) error
		wantErr string
	}{
		{"not an object on the way", `{"mcpServers": []}`, setOp("mcpServers.lima.command", "x"), "mcpServers is an array, not an object"},
		{"not an array", `{"deny": "Bash"}`, listOp("deny", "Read"), "deny is a string, not an array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := newJSONDoc([]byte(tt.src), false)
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.edit(d); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if string(d.src) != tt.src {
				t.Errorf("the document changed: %s", d.src)
			}
		})
	}
}

func TestJSONParseRejects(t *testing.T) {
	for _, src := range []string{
		`[]`,
		`"x"`,
		`{"a": 1,}`,          // trailing comma
		`{"a": 1} x`,         // garbage after
		`{'a': 1}`,           // single quotes
		`{"a": 01}`,          // leading zero
		`{"a": "x` + "\n\"}", // newline in string
		"{\"a\": 1 // c\n}",  // comment in strict JSON
		`{"a": tru}`,
		`{"a" 1}`,
		`{"a": [1 2]}`,
		`{"a": "\x"}`,
		"\ufeff{}", // byte-order mark: JSON.parse rejects it too
		strings.Repeat("[", maxJSONDepth+1),
	} {
		if _, err := newJSONDoc([]byte(src), false); err == nil {
			t.Errorf("%q parsed", src)
		}
	}
	for _, src := range []string{"", "  \n", "{}", `{"a": [1, -2.5e+3, true, false, null, {"b": "\u00e9\n"}]}`} {
		if _, err := newJSONDoc([]byte(src), false); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
	if _, err := newJSONDoc([]byte("/* c */ {\"a\": 1 /* d */} // e"), true); err != nil {
		t.Errorf("JSONC: %v", err)
	}
	_, err := newJSONDoc([]byte("{\n  \"a\": 1,\n  \"b\": x\n}"), false)
	if err == nil || !strings.Contains(err.Error(), "line 3, column 8") {
		t.Errorf("error should locate the problem: %v", err)
	}
	for _, src := range []string{`{"a": 1,}`, `{"a": [1, ]}`} {
		if _, err := newJSONDoc([]byte(src), false); err == nil || !strings.Contains(err.Error(), "no trailing comma") {
			t.Errorf("%s: %v", src, err)
		}
	}
}

func TestStripJSONComments(t *testing.T) {
	src := "{\"u\": \"http://x/*y*/\", // c\n /* multi\nline */ \"v\": \"a\\\"//b\"}"
	got := string(stripJSONComments([]byte(src)))
	want := "{\"u\": \"http://x/*y*/\",     \n         \n        \"v\": \"a\\\"//b\"}"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
