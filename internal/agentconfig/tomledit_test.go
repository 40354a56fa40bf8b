package agentconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTOMLEdit(t *testing.T) {
	server := []setTOML{
		{Table: []string{"mcp_servers", "lima"}, Key: "command", Value: "limactl"},
		{Table: []string{"mcp_servers", "lima"}, Key: "args", Value: []string{"mcp", "serve", "default"}},
	}
	tests := []struct {
		name string
		src  string
		sets []setTOML
		want string
	}{
		{
			name: "new file",
			src:  "",
			sets: server,
			want: "[mcp_servers.lima]\ncommand = \"limactl\"\nargs = [\"mcp\", \"serve\", \"default\"]\n",
		},
		{
			name: "appended after other tables, comments kept",
			src:  "# my config\nmodel = \"o3\" # pinned\n\n[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\n  \"-y\", # flag\n  \"docs-mcp\",\n]\n",
			sets: server,
			want: "# my config\nmodel = \"o3\" # pinned\n\n[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\n  \"-y\", # flag\n  \"docs-mcp\",\n]\n\n[mcp_servers.lima]\ncommand = \"limactl\"\nargs = [\"mcp\", \"serve\", \"default\"]\n",
		},
		{
			name: "no final newline",
			src:  "model = \"o3\"",
			sets: server,
			want: "model = \"o3\"\n\n[mcp_servers.lima]\ncommand = \"limactl\"\nargs = [\"mcp\", \"serve\", \"default\"]\n",
		},
		{
			name: "existing table: changed key replaced in place, missing key added after the last, others kept",
			src:  "[mcp_servers.lima] # ours\ncommand = \"/old/limactl\" # path\nenv = { A = \"1\" }\n\n[mcp_servers.lima.env2]\nB = \"2\"\n\n[other]\nx = 1\n",
			sets: server,
			want: "[mcp_servers.lima] # ours\ncommand = \"limactl\" # path\nenv = { A = \"1\" }\nargs = [\"mcp\", \"serve\", \"default\"]\n\n[mcp_servers.lima.env2]\nB = \"2\"\n\n[other]\nx = 1\n",
		},
		{
			name: "empty existing table",
			src:  "[features]\n\n[x]\ny = 2\n",
			sets: []setTOML{{Table: []string{"features"}, Key: "shell_tool", Value: false}},
			want: "[features]\nshell_tool = false\n\n[x]\ny = 2\n",
		},
		{
			name: "already set: untouched",
			src:  "[features]\nshell_tool=false # off\n",
			sets: []setTOML{{Table: []string{"features"}, Key: "shell_tool", Value: false}},
			want: "[features]\nshell_tool=false # off\n",
		},
		{
			name: "set through dotted keys elsewhere: untouched",
			src:  "features.shell_tool = false\n",
			sets: []setTOML{{Table: []string{"features"}, Key: "shell_tool", Value: false}},
			want: "features.shell_tool = false\n",
		},
		{
			name: "table only implied by a subtable",
			src:  "[mcp_servers.lima.env]\nA = \"1\"\n",
			sets: server,
			want: "[mcp_servers.lima.env]\nA = \"1\"\n\n[mcp_servers.lima]\ncommand = \"limactl\"\nargs = [\"mcp\", \"serve\", \"default\"]\n",
		},
		{
			name: "quoted names and CRLF",
			src:  "[\"mcp_servers\".'my.lima']\r\ncommand = \"x\"\r\n",
			sets: []setTOML{{Table: []string{"mcp_servers", "my.lima"}, Key: "command", Value: "limactl"}, {Table: []string{"mcp_servers", "b c"}, Key: "args", Value: []string{"a\"b"}}},
			want: "[\"mcp_servers\".'my.lima']\r\ncommand = \"limactl\"\r\n\r\n[mcp_servers.\"b c\"]\r\nargs = [\"a\\\"b\"]\r\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.toml")
			if tt.src != "" {
				if err := os.WriteFile(path, []byte(tt.src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c, err := planTOMLFile(path, 0o644, tt.sets...)
			if err != nil {
				t.Fatal(err)
			}
			if string(c.After) != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", c.After, tt.want)
			}
			if (tt.src == tt.want) == c.Changed() {
				t.Errorf("Changed() = %v", c.Changed())
			}
		})
	}
}

func TestTOMLEditRefuses(t *testing.T) {
	tests := []struct {
		name, src, wantErr string
	}{
		{"not TOML", "model = \"x\"\n[mcp_servers\ncommand = 1\n", "not valid TOML: line 2, column"},
		{"duplicate key", "a = 1\na = 2\n", "not valid TOML"},
		{"inline table", "[mcp_servers]\nlima = { command = \"x\" }\n", "without disturbing"},
		{"inline parent", "mcp_servers = { other = { command = \"x\" } }\n", "without disturbing"},
		{"dotted keys", "mcp_servers.lima.command = \"x\"\n", "without disturbing"},
		{"not a table", "mcp_servers = 3\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.toml")
			if err := os.WriteFile(path, []byte(tt.src), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := planTOMLFile(path, 0o644,
				setTOML{Table: []string{"mcp_servers", "lima"}, Key: "command", Value: "limactl"},
				setTOML{Table: []string{"mcp_servers", "lima"}, Key: "args", Value: []string{"mcp"}})
			if err == nil || !strings.Contains(err.Error(), "refusing to change "+path) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestTOMLString(t *testing.T) {
	got := tomlString("a\"b\\c\nd\te\x01\x7fé")
	want := `"a\"b\\c\nd\te\u0001\u007Fé"`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	m, err := decodeTOML([]byte("k = " + got))
	if err != nil || m["k"] != "a\"b\\c\nd\te\x01\x7fé" {
		t.Errorf("round trip: %v %q", err, m["k"])
	}
}
