package agentconfig

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzTOMLEdit looks for documents on which the TOML edit panics or writes a file that does not
// hold exactly what it should (planTOMLFile checks the latter itself and returns an error).
func FuzzTOMLEdit(f *testing.F) {
	for _, seed := range []string{
		"", "model = \"x\"\n[features]\nweb_search = true\n", "[mcp_servers.lima]\ncommand = \"x\" # c\n",
		"[[profiles]]\nname = 'a'\n[mcp_servers]\n", "a.b.c = 1\n[mcp_servers.\"lima\"]\nargs = [\n 1,\n]\n",
		"[mcp_servers]\nlima = { command = \"x\" }\n", "x = \"\"\"\n[mcp_servers.lima]\n\"\"\"\n",
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, src string) {
		path := filepath.Join(dir, "config.toml")
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := planTOMLFile(path, 0o644,
			setTOML{Table: []string{"mcp_servers", "lima"}, Key: "command", Value: "limactl"},
			setTOML{Table: []string{"mcp_servers", "lima"}, Key: "args", Value: []string{"mcp", "serve"}},
			setTOML{Table: []string{"features"}, Key: "shell_tool", Value: false})
		if err != nil {
			return
		}
		m, err := decodeTOML(c.After)
		if err != nil {
			t.Fatalf("wrote invalid TOML: %v\n%s", err, c.After)
		}
		if v, _ := lookupPlain(m, []string{"features", "shell_tool"}); v != false {
			t.Fatalf("shell_tool = %v", v)
		}
	})
}
