package toolsuite

import (
	"encoding/base64"
	"fmt"
	"path"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// dir makes a fresh directory under the scratch directory.
func dir(t *testing.T, env Env, name string) string {
	d := path.Join(env.Scratch, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+"-"+name)
	env.Shell(t, fmt.Sprintf("rm -rf '%s' && mkdir -p '%s'", d, d))
	return d
}

func testReadFile(t *testing.T, env Env) {
	s := env.Session
	d := dir(t, env, "read")
	t.Run("whole file", func(t *testing.T) {
		want := env.Shell(t, "cat /etc/os-release")
		r := MustOK(t, s, "read_file", map[string]any{"path": "/etc/os-release"})
		if r.Structured["content"] != want {
			t.Errorf("content %q want %q", r.Structured["content"], want)
		}
	})
	t.Run("missing", func(t *testing.T) {
		r := MustError(t, s, "read_file", map[string]any{"path": "/etc/os-release-info"}, "file does not exist")
		if !strings.HasPrefix(r.Text, "file does not exist") {
			t.Errorf("Lima's clients see %q first: %q", "file does not exist", r.Text)
		}
	})
	t.Run("relative", func(t *testing.T) {
		MustError(t, s, "read_file", map[string]any{"path": "os-release"}, "expected an absolute path")
	})
	t.Run("directory", func(t *testing.T) {
		MustError(t, s, "read_file", map[string]any{"path": d}, "is a directory", "list_directory")
	})
	t.Run("permission denied", func(t *testing.T) {
		MustError(t, s, "read_file", map[string]any{"path": "/etc/shadow"}, "permission denied")
	})
	t.Run("fifo does not hang", func(t *testing.T) {
		env.Shell(t, fmt.Sprintf("mkfifo '%s/fifo'", d))
		MustError(t, s, "read_file", map[string]any{"path": d + "/fifo"}, "not a regular file")
		// The server still answers.
		MustOK(t, s, "list_directory", map[string]any{"path": d})
	})
	t.Run("offset and limit", func(t *testing.T) {
		env.Shell(t, fmt.Sprintf("seq 1 5000 > '%s/lines'", d))
		r := MustOK(t, s, "read_file", map[string]any{"path": d + "/lines"})
		st := r.Structured
		if !strings.HasPrefix(st["content"].(string), "1\n2\n") || !strings.HasSuffix(st["content"].(string), "\n2000\n") ||
			st["truncated"] != true || st["end_line"] != 2000.0 || st["total_lines"] != 5000.0 || !strings.Contains(st["note"].(string), "offset=2000") {
			t.Errorf("default window: %v", without(st, "content"))
		}
		r = MustOK(t, s, "read_file", map[string]any{"path": d + "/lines", "offset": 10, "limit": 3})
		if r.Structured["content"] != "11\n12\n13\n" || r.Structured["start_line"] != 10.0 || r.Structured["end_line"] != 13.0 {
			t.Errorf("offset 10 limit 3: %v", r.Structured)
		}
		r = MustOK(t, s, "read_file", map[string]any{"path": d + "/lines", "offset": 4998})
		if r.Structured["content"] != "4999\n5000\n" {
			t.Errorf("last lines: %v", r.Structured)
		}
		r = MustOK(t, s, "read_file", map[string]any{"path": d + "/lines", "offset": 9000})
		if r.Structured["content"] != "" || !strings.Contains(r.Structured["note"].(string), "past the end") {
			t.Errorf("past the end: %v", r.Structured)
		}
		MustError(t, s, "read_file", map[string]any{"path": d + "/lines", "offset": -1}, "offset must be")
		MustError(t, s, "read_file", map[string]any{"path": d + "/lines", "limit": 0}, "limit must be")
	})
	t.Run("byte cap", func(t *testing.T) {
		env.Shell(t, fmt.Sprintf("head -c 3000000 /dev/zero | tr '\\0' a > '%s/oneline'", d))
		r := MustOK(t, s, "read_file", map[string]any{"path": d + "/oneline"})
		if n := len(r.Structured["content"].(string)); n == 0 || n > 1<<20 || r.Structured["truncated"] != true {
			t.Errorf("one 3 MB line: %d bytes returned, %v", n, without(r.Structured, "content"))
		}
	})
	t.Run("binary", func(t *testing.T) {
		env.Shell(t, fmt.Sprintf("printf 'ELF\\0\\1\\2\\3' > '%s/bin'", d))
		r := MustOK(t, s, "read_file", map[string]any{"path": d + "/bin"})
		if r.Structured["binary"] != true || !strings.Contains(r.Structured["content"].(string), "binary file") {
			t.Errorf("got %v", r.Structured)
		}
	})
	t.Run("image", func(t *testing.T) {
		// A 1x1 PNG.
		png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
		env.Shell(t, fmt.Sprintf("echo %s | base64 -d > '%s/dot.png'", png, d))
		r := MustOK(t, s, "read_file", map[string]any{"path": d + "/dot.png"})
		var img *mcp.ImageContent
		for _, c := range r.Raw.Content {
			if ic, ok := c.(*mcp.ImageContent); ok {
				img = ic
			}
		}
		raw, _ := base64.StdEncoding.DecodeString(png)
		if img == nil || img.MIMEType != "image/png" || string(img.Data) != string(raw) || r.Structured["mime_type"] != "image/png" {
			t.Errorf("image content missing or wrong: %#v %v", img, r.Structured)
		}
	})
	t.Run("through links", func(t *testing.T) {
		env.Shell(t, fmt.Sprintf("cd '%s' && printf 'linked\\n' > target.txt && ln -s target.txt to-file && ln -s . to-dir && ln -s nowhere dangling", d))
		if r := MustOK(t, s, "read_file", map[string]any{"path": d + "/to-file"}); r.Structured["content"] != "linked\n" {
			t.Errorf("through a link: %v", r.Structured)
		}
		MustError(t, s, "read_file", map[string]any{"path": d + "/to-dir"}, "is a directory")
		MustError(t, s, "read_file", map[string]any{"path": d + "/dangling"}, "file does not exist")
		MustError(t, s, "read_file", map[string]any{"path": d + "/target.txt/x"}, "file does not exist")
	})
	t.Run("unicode and odd names", func(t *testing.T) {
		name := d + "/ünï cödé 💡 'q'.txt"
		env.Shell(t, fmt.Sprintf("printf 'héllo 💡\\n' > %q", name))
		r := MustOK(t, s, "read_file", map[string]any{"path": name})
		if r.Structured["content"] != "héllo 💡\n" {
			t.Errorf("got %v", r.Structured)
		}
	})
}

func testWriteFile(t *testing.T, env Env) {
	s := env.Session
	d := dir(t, env, "write")
	t.Run("create and overwrite", func(t *testing.T) {
		r := MustOK(t, s, "write_file", map[string]any{"path": d + "/mcp.test", "content": "foo"})
		if r.Text != "{}" {
			t.Errorf("text %q, Lima's is {}", r.Text)
		}
		if got := env.Shell(t, "cat "+d+"/mcp.test"); got != "foo" {
			t.Errorf("got %q", got)
		}
		MustOK(t, s, "write_file", map[string]any{"path": d + "/mcp.test", "content": "bar"})
		if got := env.Shell(t, "cat "+d+"/mcp.test"); got != "bar" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("creates parent directories", func(t *testing.T) {
		MustOK(t, s, "write_file", map[string]any{"path": d + "/tmp/tmp/tmp", "content": "tmp"})
		if got := env.Shell(t, "cat "+d+"/tmp/tmp/tmp"); got != "tmp" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("keeps the mode of an existing file", func(t *testing.T) {
		env.Shell(t, fmt.Sprintf("printf '#!/bin/sh\\n' > %s/x.sh && chmod 755 %s/x.sh", d, d))
		MustOK(t, s, "write_file", map[string]any{"path": d + "/x.sh", "content": "#!/bin/sh\necho hi\n"})
		if got := env.Shell(t, "stat -c %a "+d+"/x.sh"); got != "755\n" {
			t.Errorf("mode %q", got)
		}
	})
	t.Run("directory not writable", func(t *testing.T) {
		env.Shell(t, fmt.Sprintf("mkdir -p %s/ro && chmod 555 %s/ro", d, d))
		MustError(t, s, "write_file", map[string]any{"path": d + "/ro/f", "content": "x"}, "permission denied")
		env.Shell(t, "chmod 755 "+d+"/ro")
	})
	t.Run("relative", func(t *testing.T) {
		MustError(t, s, "write_file", map[string]any{"path": "tmp/mcp.test", "content": "baz"}, "expected an absolute path")
	})
	t.Run("onto a directory", func(t *testing.T) {
		MustError(t, s, "write_file", map[string]any{"path": d, "content": "x"}, "is a directory")
	})
	t.Run("huge content", func(t *testing.T) {
		MustError(t, s, "write_file", map[string]any{"path": d + "/huge", "content": strings.Repeat("x", 11<<20)}, "limit")
	})
	t.Run("empty content", func(t *testing.T) {
		MustOK(t, s, "write_file", map[string]any{"path": d + "/empty", "content": ""})
		if got := env.Shell(t, "stat -c %s "+d+"/empty"); got != "0\n" {
			t.Errorf("size %q", got)
		}
	})
}

func testReplace(t *testing.T, env Env) {
	s := env.Session
	d := dir(t, env, "replace")
	f := d + "/main.go"
	env.Shell(t, fmt.Sprintf("printf 'package main\\n\\nfunc a() { return 1 }\\nfunc b() { return 1 }\\n' > %s", f))
	t.Run("unique", func(t *testing.T) {
		r := MustOK(t, s, "replace", map[string]any{"file_path": f, "old_string": "func a() { return 1 }", "new_string": "func a() { return 2 }"})
		if r.Structured["replacements"] != 1.0 {
			t.Errorf("got %v", r.Structured)
		}
		if got := env.Shell(t, "cat "+f); got != "package main\n\nfunc a() { return 2 }\nfunc b() { return 1 }\n" {
			t.Errorf("file %q", got)
		}
	})
	t.Run("not found", func(t *testing.T) {
		MustError(t, s, "replace", map[string]any{"file_path": f, "old_string": "func c()", "new_string": "x"}, "not found", "nothing was changed")
	})
	t.Run("too many", func(t *testing.T) {
		MustError(t, s, "replace", map[string]any{"file_path": f, "old_string": "return", "new_string": "return "}, "occurs 2 times", "expected_replacements")
		MustOK(t, s, "replace", map[string]any{"file_path": f, "old_string": "{ return", "new_string": "{\n\treturn", "expected_replacements": 2})
		if got := env.Shell(t, "grep -c '^\treturn' "+f); got != "2\n" {
			t.Errorf("after replacing 2: %q", got)
		}
	})
	t.Run("create with empty old_string", func(t *testing.T) {
		r := MustOK(t, s, "replace", map[string]any{"file_path": d + "/new/file.txt", "old_string": "", "new_string": "hello\n"})
		if r.Structured["created"] != true || env.Shell(t, "cat "+d+"/new/file.txt") != "hello\n" {
			t.Errorf("got %v", r.Structured)
		}
		MustError(t, s, "replace", map[string]any{"file_path": f, "old_string": "", "new_string": "x"}, "already exists")
	})
	t.Run("through a link", func(t *testing.T) {
		env.Shell(t, fmt.Sprintf("cd '%s' && printf 'one two\\n' > real.txt && ln -s real.txt link.txt", d))
		MustOK(t, s, "replace", map[string]any{"file_path": d + "/link.txt", "old_string": "two", "new_string": "three"})
		if got := env.Shell(t, fmt.Sprintf("cat '%s/real.txt'; test -L '%s/link.txt' && echo link", d, d)); got != "one three\nlink\n" {
			t.Errorf("after an edit through a link: %q", got)
		}
	})
	t.Run("binary and not regular", func(t *testing.T) {
		env.Shell(t, fmt.Sprintf("cd '%s' && printf 'a\\0b' > bin && mkfifo fifo", d))
		MustError(t, s, "replace", map[string]any{"file_path": d + "/bin", "old_string": "a", "new_string": "c"}, "binary file")
		MustError(t, s, "replace", map[string]any{"file_path": d + "/fifo", "old_string": "a", "new_string": "c"}, "not a regular file")
		MustError(t, s, "replace", map[string]any{"file_path": d + "/main.go/x", "old_string": "a", "new_string": "c"}, "file does not exist")
	})
	t.Run("bad input", func(t *testing.T) {
		MustError(t, s, "replace", map[string]any{"file_path": "main.go", "old_string": "a", "new_string": "b"}, "expected an absolute path")
		MustError(t, s, "replace", map[string]any{"file_path": d + "/missing", "old_string": "a", "new_string": "b"}, "file does not exist")
		MustError(t, s, "replace", map[string]any{"file_path": f, "old_string": "a", "new_string": "a"}, "the same")
		MustError(t, s, "replace", map[string]any{"file_path": d, "old_string": "a", "new_string": "b"}, "is a directory")
		MustError(t, s, "replace", map[string]any{"file_path": f, "old_string": "a", "new_string": "b", "expected_replacements": 0}, "expected_replacements must be")
	})
}

func testListDirectory(t *testing.T, env Env) {
	s := env.Session
	d := dir(t, env, "ls")
	env.Shell(t, fmt.Sprintf("cd %s && mkdir sub && echo hi > b.txt && ln -s b.txt link && touch 'a b'", d))
	r := MustOK(t, s, "list_directory", map[string]any{"path": d})
	ents := r.Structured["entries"].([]any)
	var names []string
	for _, e := range ents {
		m := e.(map[string]any)
		names = append(names, m["name"].(string))
		switch m["name"] {
		case "sub":
			if m["is_dir"] != true {
				t.Errorf("sub: %v", m)
			}
		case "b.txt":
			if m["size"] != 3.0 || m["is_dir"] != false {
				t.Errorf("b.txt: %v", m)
			}
		case "link":
			if m["link_target"] != "b.txt" {
				t.Errorf("link: %v", m)
			}
		}
	}
	if strings.Join(names, ",") != "a b,b.txt,link,sub" {
		t.Errorf("names %v", names)
	}
	MustError(t, s, "list_directory", map[string]any{"path": d + "/nope"}, "file does not exist")
	MustError(t, s, "list_directory", map[string]any{"path": d + "/b.txt"}, "not a directory")
	MustError(t, s, "list_directory", map[string]any{"path": d + "/b.txt/x"}, "file does not exist")
	MustError(t, s, "list_directory", map[string]any{"path": "sub"}, "expected an absolute path")
}

func without(m map[string]any, key string) map[string]any {
	c := map[string]any{}
	for k, v := range m {
		if k != key {
			c[k] = v
		}
	}
	return c
}
