package toolsuite

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func testGlob(t *testing.T, env Env) {
	s := env.Session
	d := dir(t, env, "glob")
	env.Shell(t, fmt.Sprintf("cd %s && mkdir -p tests src/a/b && touch tests/mcp.bats tests/other.txt src/a/b/deep.go src/top.go 'src/sp ace.go'", d))
	t.Run("wildcard", func(t *testing.T) {
		r := MustOK(t, s, "glob", map[string]any{"pattern": "*/*p.bats", "path": d})
		if got := fmt.Sprint(r.Structured["matches"]); got != "["+d+"/tests/mcp.bats]" {
			t.Errorf("got %s", got)
		}
	})
	t.Run("doublestar", func(t *testing.T) {
		r := MustOK(t, s, "glob", map[string]any{"pattern": "src/**/*.go", "path": d})
		want := fmt.Sprint([]any{d + "/src/a/b/deep.go", d + "/src/sp ace.go", d + "/src/top.go"})
		if got := fmt.Sprint(r.Structured["matches"]); got != want {
			t.Errorf("got %s want %s", got, want)
		}
	})
	t.Run("no match", func(t *testing.T) {
		r := MustOK(t, s, "glob", map[string]any{"pattern": "nothing.to.see", "path": d})
		if m, ok := r.Structured["matches"].([]any); !ok || len(m) != 0 {
			t.Errorf("got %v", r.Structured)
		}
	})
	t.Run("default directory", func(t *testing.T) {
		r := MustOK(t, s, "glob", map[string]any{"pattern": "*"})
		if _, ok := r.Structured["matches"].([]any); !ok {
			t.Errorf("got %v", r.Structured)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		MustError(t, s, "glob", map[string]any{"pattern": "[", "path": d}, "invalid glob pattern")
		MustError(t, s, "glob", map[string]any{"pattern": "*", "path": d + "/missing"}, "does not exist")
		MustError(t, s, "glob", map[string]any{"pattern": "*", "path": d + "/src/top.go"}, "not a directory")
		MustError(t, s, "glob", map[string]any{"pattern": "*", "path": "rel"}, "expected an absolute path")
		MustError(t, s, "glob", map[string]any{"pattern": ""}, "pattern is empty")
	})
}

func testSearch(t *testing.T, env Env) {
	s := env.Session
	d := dir(t, env, "search")
	env.Shell(t, fmt.Sprintf(`cd %s && mkdir -p tests && printf '# The light bulb emoji \360\237\222\241 (U+1F4A1)\n    tools_call search 💡\n    tools_call search needle in a haystack\n' > tests/mcp.bats && printf 'needle in a haystack\n' > top.js && printf 'bin\0needle in a haystack' > blob.bin`, d))
	t.Run("finds text", func(t *testing.T) {
		r := MustOK(t, s, "search_file_content", map[string]any{"pattern": "needle in a haystack", "path": d})
		out := r.Structured["git_grep_output"].(string)
		if !regexp.MustCompile(`(?m)^tests/mcp.bats:[0-9]+: +tools_call`).MatchString(out) || !strings.Contains(out, "top.js:1:needle") || strings.Contains(out, "blob.bin") {
			t.Errorf("got %q", out)
		}
	})
	t.Run("above U+FFFF", func(t *testing.T) {
		r := MustOK(t, s, "search_file_content", map[string]any{"pattern": "💡", "path": d})
		out := r.Structured["git_grep_output"].(string)
		if !regexp.MustCompile(`(?m)^tests/mcp.bats:[0-9]+:# The light bulb`).MatchString(out) || !regexp.MustCompile(`(?m)^tests/mcp.bats:[0-9]+: +tools_call`).MatchString(out) {
			t.Errorf("got %q", out)
		}
	})
	t.Run("not found", func(t *testing.T) {
		r := MustOK(t, s, "search_file_content", map[string]any{"pattern": "💡 not found", "path": d})
		if r.Structured["git_grep_output"] != "" {
			t.Errorf("got %v", r.Structured)
		}
	})
	t.Run("include", func(t *testing.T) {
		r := MustOK(t, s, "search_file_content", map[string]any{"pattern": "needle", "path": d, "include": "*.js"})
		if r.Structured["git_grep_output"] != "top.js:1:needle in a haystack\n" {
			t.Errorf("got %v", r.Structured)
		}
	})
	t.Run("extended regex", func(t *testing.T) {
		r := MustOK(t, s, "search_file_content", map[string]any{"pattern": `tools_call\s+search (💡|needle)`, "path": d})
		if n := strings.Count(r.Structured["git_grep_output"].(string), "\n"); n != 2 {
			t.Errorf("got %v", r.Structured)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		MustError(t, s, "search_file_content", map[string]any{"pattern": "foo(", "path": d}, "invalid regular expression")
		MustError(t, s, "search_file_content", map[string]any{"pattern": "x", "path": d + "/missing"}, "file does not exist")
		MustError(t, s, "search_file_content", map[string]any{"pattern": "x", "path": d + "/top.js"}, "not a directory")
		MustError(t, s, "search_file_content", map[string]any{"pattern": ""}, "pattern is empty")
	})
}
