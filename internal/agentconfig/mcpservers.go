package agentconfig

import (
	"fmt"
	"strings"
)

// Claude Code, Gemini CLI and Cursor all keep MCP servers in a JSON object "mcpServers" keyed by
// server name, each stdio server with "command" and "args".

// stdioServerEdits set the server's command and args under mcpServers.NAME (and "type": "stdio"
// where the client writes one). Other keys of an existing entry (env, cwd, timeouts...) stay.
func stdioServerEdits(o Options, withType bool) []jsonEdit {
	entry := []string{"mcpServers", o.ServerName}
	edits := []jsonEdit{refuseJSONKeys{Path: entry, Keys: []string{"url", "httpUrl", "serverUrl"}}}
	if withType {
		edits = append(edits, setJSON{Path: childPath(entry, "type"), Value: "stdio"})
	}
	return append(edits,
		setJSON{Path: childPath(entry, "command"), Value: o.Command[0]},
		setJSON{Path: childPath(entry, "args"), Value: append([]string{}, o.Command[1:]...)},
	)
}

// refuseJSONKeys stops the plan if the object at Path has any of Keys: an entry of that name
// that is a remote (URL) server is someone else's, not one to turn into a stdio server.
type refuseJSONKeys struct {
	Path []string
	Keys []string
}

func (e refuseJSONKeys) editDoc(d *jsonDoc) error {
	n := d.lookup(e.Path)
	if n == nil || n.kind != jsonObjectKind {
		return nil
	}
	for _, k := range e.Keys {
		if n.member(k) != nil {
			return fmt.Errorf("%s already names a server reached by %q, not one started by a command; "+
				"remove it or choose another name with --name", strings.Join(e.Path, "."), k)
		}
	}
	return nil
}

func (refuseJSONKeys) editPlain(map[string]any) error { return nil }

// childPath returns base plus key, in a new slice.
func childPath(base []string, key ...string) []string {
	return append(append([]string{}, base...), key...)
}
