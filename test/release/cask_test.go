// Package release checks the release configuration against the documentation: the Homebrew cask
// that .goreleaser.yaml generates must do and say what docs/getting-started.md tells a Mac user.
package release

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The parts of .goreleaser.yaml's homebrew_casks entry this test reads.
type cask struct {
	Name       string   `yaml:"name"`
	Binaries   []string `yaml:"binaries"`
	Repository struct {
		Owner string `yaml:"owner"`
		Name  string `yaml:"name"`
	} `yaml:"repository"`
	Directory    string `yaml:"directory"`
	SkipUpload   string `yaml:"skip_upload"`
	Dependencies []struct {
		Formula string `yaml:"formula"`
	} `yaml:"dependencies"`
	Hooks struct {
		Post struct {
			Install string `yaml:"install"`
		} `yaml:"post"`
	} `yaml:"hooks"`
	Caveats string `yaml:"caveats"`
}

func readRepoFile(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func theCask(t *testing.T) cask {
	t.Helper()
	var cfg struct {
		Casks []cask `yaml:"homebrew_casks"`
	}
	if err := yaml.Unmarshal([]byte(readRepoFile(t, ".goreleaser.yaml")), &cfg); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if len(cfg.Casks) != 1 {
		t.Fatalf(".goreleaser.yaml has %d homebrew_casks, want 1", len(cfg.Casks))
	}
	return cfg.Casks[0]
}

// gettingStarted is docs/getting-started.md with each run of white space made one space, so that
// a sentence wrapped over two lines still matches.
func gettingStarted(t *testing.T) string {
	return strings.Join(strings.Fields(readRepoFile(t, "docs/getting-started.md")), " ")
}

// The install command the docs give is this cask in this tap, with Lima, which the cask depends
// on; pre-releases are not pushed to the tap.
func TestCaskIsTheOneTheDocsInstall(t *testing.T) {
	c, doc := theCask(t), gettingStarted(t)
	tap := strings.TrimPrefix(c.Repository.Name, "homebrew-")
	if tap == c.Repository.Name {
		t.Fatalf("the tap repository %q is not named homebrew-NAME: `brew install OWNER/NAME/CASK` would not find it", c.Repository.Name)
	}
	install := "brew install lima " + c.Repository.Owner + "/" + tap + "/" + c.Name
	if !strings.Contains(doc, install) {
		t.Errorf("docs/getting-started.md does not say %q", install)
	}
	if len(c.Dependencies) != 1 || c.Dependencies[0].Formula != "lima" {
		t.Errorf("the cask's dependencies are %+v, want the formula lima alone", c.Dependencies)
	}
	if len(c.Binaries) != 1 || c.Binaries[0] != "limactl-mcp" {
		t.Errorf("the cask links %v, want limactl-mcp (the plugin's name, which `limactl mcp` looks up on PATH)", c.Binaries)
	}
	if c.Directory != "Casks" || c.SkipUpload != "auto" {
		t.Errorf("directory %q, skip_upload %q: want Casks and auto (pre-releases are not pushed)", c.Directory, c.SkipUpload)
	}
}

// The install hook removes the quarantine attribute from the one binary the cask installs, on
// macOS only, and nothing else; the docs say so, with the command a user would run themselves.
func TestCaskInstallHookIsWhatTheDocsSay(t *testing.T) {
	c, doc := theCask(t), gettingStarted(t)
	hook := strings.Join(strings.Fields(c.Hooks.Post.Install), " ")
	want := `if OS.mac? system_command "/usr/bin/xattr", args: ["-dr", "com.apple.quarantine", "#{staged_path}/limactl-mcp"] end`
	if hook != want {
		t.Errorf("the cask's post-install hook is\n\t%s\nwant\n\t%s", hook, want)
	}
	if !strings.Contains(doc, "xattr -dr com.apple.quarantine") {
		t.Error(`docs/getting-started.md does not say that the cask runs "xattr -dr com.apple.quarantine" on limactl-mcp`)
	}
	if !strings.Contains(doc, "not signed or notarized") {
		t.Error("docs/getting-started.md does not say why: the binary is not signed or notarized")
	}
}

// Every command the caveats print is one docs/getting-started.md gives, and every agent they
// name is one the docs show how to configure.
func TestCaskCaveatsAreWhatTheDocsSay(t *testing.T) {
	c, doc := theCask(t), gettingStarted(t)
	var cmds []string
	for _, line := range strings.Split(c.Caveats, "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "limactl ") {
			cmds = append(cmds, l)
		}
	}
	for _, m := range regexp.MustCompile(`"(limactl [^"]+)"`).FindAllStringSubmatch(c.Caveats, -1) {
		cmds = append(cmds, m[1])
	}
	if len(cmds) < 4 {
		t.Fatalf("found %d commands in the caveats (%q), want at least the start, configure, review and --version ones", len(cmds), cmds)
	}
	for _, cmd := range cmds {
		if strings.HasSuffix(cmd, "...") { // "run it as \"limactl mcp ...\"": not a command
			continue
		}
		if !strings.Contains(doc, cmd) {
			t.Errorf("the caveats say %q, docs/getting-started.md does not", cmd)
		}
	}
	m := regexp.MustCompile(`\(or ([a-z, ]+)\)`).FindStringSubmatch(c.Caveats)
	if m == nil {
		t.Fatal(`the caveats name no other agents ("(or gemini, ...)")`)
	}
	for _, agent := range strings.Split(m[1], ",") {
		agent = strings.TrimSpace(agent)
		if cmd := "limactl mcp configure " + agent + " --instance agent"; !strings.Contains(doc, cmd) {
			t.Errorf("the caveats name the agent %q; docs/getting-started.md does not say %q", agent, cmd)
		}
	}
}
