package agentconfig

import (
	"os"
	"path/filepath"
	"runtime"
)

// serverEntryEdits set the members of one server's entry, the object at entry (e.g. servers.NAME),
// in the order given, after refusing an entry that has any of the refuse keys (a server reached
// by URL is someone else's, not one to turn into a command). Other members of an existing entry
// (env, timeouts...) stay. It is stdioServerEdits for clients whose entry is not
// mcpServers.NAME {command, args}.
func serverEntryEdits(entry []string, refuse []string, members ...keyValue) []jsonEdit {
	edits := []jsonEdit{refuseJSONKeys{Path: entry, Keys: refuse}}
	for _, m := range members {
		edits = append(edits, setJSON{Path: childPath(entry, m.Key), Value: m.Value})
	}
	return edits
}

// userConfigHome is the directory of the user's configuration on Linux and the BSDs:
// $XDG_CONFIG_HOME when it is an absolute path (the XDG Base Directory rule), else ~/.config.
func (o Options) userConfigHome() string {
	if dir := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(dir) {
		return dir
	}
	return filepath.Join(o.HomeDir, ".config")
}

// roamingAppData is Windows' %APPDATA% (the roaming application data directory).
func (o Options) roamingAppData() string {
	if dir := os.Getenv("APPDATA"); filepath.IsAbs(dir) {
		return dir
	}
	return filepath.Join(o.HomeDir, "AppData", "Roaming")
}

// goos is runtime.GOOS; tests replace it to check each system's paths.
var goos = runtime.GOOS
