package netpolicy

import (
	"fmt"
	"sort"
	"strings"
)

// presetTable is THE list of network presets: the names an allow policy may give as @NAME
// for a set of hosts (allow:@go,@npm,example.com). docs/network.md lists it exactly (a test in
// internal/command/networkcmd checks it) and `limactl mcp network presets` prints it.
//
// A preset is policy entries: host names for most, which allow every request to their hosts,
// including those that write (a publish to a registry, a push to GitHub with a token the agent
// holds); method and path rules for the read-only ones (@github-read), which do not. Hosts
// shared with other users (storage.googleapis.com serves every Google Cloud Storage bucket) are
// named in the preset's note.
var presetTable = []presetDef{
	{Name: "go", Summary: "Go modules: the module proxy and checksum database (go mod download, go get, toolchain downloads)",
		Hosts: []string{"proxy.golang.org", "sum.golang.org", "storage.googleapis.com"},
		Note:  "proxy.golang.org redirects module zips to storage.googleapis.com, which serves every Google Cloud Storage bucket, not only the proxy's"},
	{Name: "npm", Summary: "npm, yarn and pnpm packages (the npm registry and yarn's mirror of it)",
		Hosts: []string{"registry.npmjs.org", "registry.yarnpkg.com", "repo.yarnpkg.com"}},
	{Name: "npm-read", Summary: "npm, yarn and pnpm packages read only: installs and audits; a publish or any other write is refused",
		Hosts: []string{"registry.npmjs.org:ro", "registry.npmjs.org/-/npm/v1/security/*:POST", "registry.yarnpkg.com:ro", "registry.yarnpkg.com/-/npm/v1/security/*:POST", "repo.yarnpkg.com:ro"},
		Note:  "method and path rules, whose HTTPS the session's relay on the host reads (docs/network.md, Read-only HTTPS); npm audit's POSTs to the registry's security endpoints pass"},
	{Name: "pypi", Summary: "PyPI packages (pip, uv, poetry)",
		Hosts: []string{"pypi.org", "files.pythonhosted.org"}},
	{Name: "crates", Summary: "Rust crates from crates.io (cargo)",
		Hosts: []string{"crates.io", "index.crates.io", "static.crates.io"}},
	{Name: "rubygems", Summary: "Ruby gems (gem, bundler)",
		Hosts: []string{"rubygems.org", "index.rubygems.org"}},
	{Name: "maven", Summary: "Maven Central and Gradle (plugins and wrapper distributions)",
		Hosts: []string{"repo.maven.apache.org", "repo1.maven.org", "plugins.gradle.org", "plugins-artifacts.gradle.org", "services.gradle.org", "downloads.gradle.org"}},
	{Name: "apt", Summary: "Debian and Ubuntu package mirrors (apt)",
		Hosts: []string{"deb.debian.org", "security.debian.org", "archive.ubuntu.com", "*.archive.ubuntu.com", "security.ubuntu.com", "ports.ubuntu.com"}},
	{Name: "github", Summary: "GitHub: clones, the API, archives, raw files and release downloads",
		Hosts: []string{"github.com", "api.github.com", "codeload.github.com", "raw.githubusercontent.com", "objects.githubusercontent.com", "release-assets.githubusercontent.com"},
		Note:  "host names only: a push or an API write with a token the agent holds goes through too; @github-read does not let them"},
	{Name: "github-read", Summary: "GitHub read only: clone and fetch over HTTPS, API reads, archives, raw files and release downloads; a push or any other write is refused",
		Hosts: []string{"github.com:ro", "github.com/*/git-upload-pack:POST", "api.github.com:ro", "codeload.github.com:ro", "raw.githubusercontent.com:ro", "objects.githubusercontent.com:ro", "release-assets.githubusercontent.com:ro"},
		Note:  "method and path rules, whose HTTPS the session's relay on the host reads (docs/network.md, Read-only HTTPS); not git over SSH, not Git LFS (its batch API is a POST)"},
	{Name: "anthropic", Summary: "Anthropic's API (Claude)",
		Hosts: []string{"api.anthropic.com"}},
	{Name: "openai", Summary: "OpenAI's API",
		Hosts: []string{"api.openai.com"}},
	{Name: "gemini", Summary: "Google's Gemini API, and what Gemini CLI uses when signed in with Google",
		Hosts: []string{"generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "oauth2.googleapis.com"}},
	{Name: "agents", Summary: "the agent providers' APIs: @anthropic, @openai and @gemini",
		Includes: []string{"anthropic", "openai", "gemini"}},
	{Name: "dev", Summary: "the language registries: @go, @npm, @pypi, @crates, @rubygems and @maven (not @github, not @apt)",
		Includes: []string{"go", "npm", "pypi", "crates", "rubygems", "maven"}},
}

type presetDef struct {
	Name, Summary, Note string
	Hosts               []string
	Includes            []string
}

// Preset is a named set of hosts an allow policy may give as @Name.
type Preset struct {
	// Name is without the '@'.
	Name    string `json:"name"`
	Summary string `json:"summary"`
	// Note says what the preset lets through beyond its summary ("" when nothing worth saying).
	Note string `json:"note,omitempty"`
	// Includes are the presets it is made of (none for most).
	Includes []string `json:"includes,omitempty"`
	// Hosts are the policy entries it stands for (those of its Includes too), canonical.
	Hosts []string `json:"hosts"`
}

// Presets are the presets, in the table's order, each with its hosts expanded.
func Presets() []Preset {
	out := make([]Preset, 0, len(presetTable))
	for _, d := range presetTable {
		hosts, _ := presetHosts(d.Name)
		out = append(out, Preset{Name: d.Name, Summary: d.Summary, Note: d.Note,
			Includes: append([]string(nil), d.Includes...), Hosts: hosts})
	}
	return out
}

// PresetNames are "@go, @npm, ..." in the table's order, for messages.
func PresetNames() string {
	names := make([]string, len(presetTable))
	for i, d := range presetTable {
		names[i] = "@" + d.Name
	}
	return strings.Join(names, ", ")
}

// presetHosts is the canonical entries preset name (no '@') stands for; false when there is no
// such preset.
func presetHosts(name string) ([]string, bool) {
	for _, d := range presetTable {
		if d.Name != name {
			continue
		}
		var hosts []string
		for _, h := range d.Hosts {
			e, err := normalizeEntry(h)
			if err != nil { // the table is checked by TestPresetTable
				panic(fmt.Sprintf("preset @%s: %v", name, err))
			}
			hosts = append(hosts, e)
		}
		for _, inc := range d.Includes {
			sub, ok := presetHosts(inc)
			if !ok {
				panic(fmt.Sprintf("preset @%s includes unknown @%s", name, inc))
			}
			hosts = append(hosts, sub...)
		}
		return dedup(hosts), true
	}
	return nil, false
}

// presetEntry checks "@name" (already lower case) and returns it.
func presetEntry(raw, name string) (string, error) {
	if _, ok := presetHosts(name); !ok {
		hint := ""
		if close := closestPreset(name); close != "" {
			hint = " (did you mean @" + close + "?)"
		}
		return "", fmt.Errorf("%q is not a preset%s: the presets are %s (limactl mcp network presets lists their hosts)", raw, hint, PresetNames())
	}
	return "@" + name, nil
}

// closestPreset is the preset whose name starts like name or contains it, "" when none does.
func closestPreset(name string) string {
	if name == "" {
		return ""
	}
	var found []string
	for _, d := range presetTable {
		if strings.HasPrefix(d.Name, name) || strings.HasPrefix(name, d.Name) || strings.Contains(d.Name, name) {
			found = append(found, d.Name)
		}
	}
	sort.Strings(found)
	if len(found) == 1 {
		return found[0]
	}
	return ""
}

func dedup(list []string) []string {
	seen := map[string]bool{}
	out := list[:0:0]
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
