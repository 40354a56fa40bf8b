// Package agentconfig writes an AI coding client's MCP configuration so that the client gets its
// file and shell tools from "limactl mcp serve INSTANCE": Claude Code, Gemini CLI, Codex, Cursor,
// OpenCode, VS Code (GitHub Copilot) and Zed. Plan works out the edits without writing anything;
// Apply writes them.
//
// Every edit is a merge into the file the client already has: other servers and settings stay
// as they were, byte for byte (the new text is spliced in; nothing else is reformatted), a second
// run changes nothing, and a file that cannot be parsed is refused rather than overwritten.
package agentconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/lima-vm/lima/v2/pkg/identifiers"
)

// Options says which client to configure and how.
type Options struct {
	Agent    string // one of AgentNames: "claude", "codex", "cursor", "gemini", "opencode", "vscode", "zed"
	Instance string // Lima instance name; default "default"
	Workdir  string // the project directory (absolute); used unless User is set
	User     bool   // configure the user's global config instead of the project's
	HomeDir  string // the user's home directory; default os.UserHomeDir (tests inject one)
	// DisableBuiltinTools also turns off the client's own file and shell tools, where the client
	// has a setting for it (the Notes say what stays on).
	DisableBuiltinTools bool
	ServerName          string   // the MCP server's key in the config; default "lima"
	Command             []string // the server command; default limactl mcp serve INSTANCE
}

// Agent is a client this package can configure.
type Agent struct {
	Name  string // as given to Options.Agent
	Title string // the product's name
}

type agentPlanner struct {
	Agent
	plan func(o Options) ([]Change, error)
}

var agentPlanners = []agentPlanner{
	{Agent{"claude", "Claude Code"}, planClaude},
	{Agent{"codex", "Codex"}, planCodex},
	{Agent{"cursor", "Cursor"}, planCursor},
	{Agent{"gemini", "Gemini CLI"}, planGemini},
	{Agent{"opencode", "OpenCode"}, planOpenCode},
	{Agent{"vscode", "VS Code (GitHub Copilot)"}, planVSCode},
	{Agent{"zed", "Zed"}, planZed},
}

// Agents lists the clients Plan knows, by name.
func Agents() []Agent {
	out := make([]Agent, len(agentPlanners))
	for i, a := range agentPlanners {
		out[i] = a.Agent
	}
	return out
}

// AgentNames lists the names Options.Agent accepts.
func AgentNames() []string {
	var names []string
	for _, a := range agentPlanners {
		names = append(names, a.Name)
	}
	return names
}

// Plan works out the changes that configure the client; it writes nothing. The first change is
// the client's MCP configuration; with DisableBuiltinTools a second one may follow for the file
// that turns off the client's own tools.
func Plan(opts Options) ([]Change, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	for _, a := range agentPlanners {
		if a.Name != o.Agent {
			continue
		}
		changes, err := a.plan(o)
		if err != nil || o.User {
			// The user's own config may be a link anywhere the user put it (dotfiles
			// managers do that): followed as the user meant.
			return changes, err
		}
		for i := range changes {
			if err := staysInside(o.Workdir, changes[i].Path); err != nil {
				return nil, err
			}
			changes[i].Within = o.Workdir
		}
		return changes, nil
	}
	return nil, fmt.Errorf("unknown agent %q (known: %s)", opts.Agent, strings.Join(AgentNames(), ", "))
}

// staysInside refuses a project config file that is, or lies under, a symbolic link leading
// out of the project: configure would write wherever the link points (a project cloned from
// someone else can hold a .claude that is a link to ~/.claude, or to any file).
func staysInside(project, path string) error {
	root, err := filepath.EvalSymlinks(project)
	if err != nil {
		return err
	}
	target, err := followLinks(path)
	if err != nil {
		return err
	}
	// The deepest part that exists, with every link on the way resolved.
	dir, rest := target, ""
	for {
		real, err := filepath.EvalSymlinks(dir)
		if err == nil {
			target = filepath.Join(real, rest)
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || filepath.Dir(dir) == dir {
			return err
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = filepath.Dir(dir)
	}
	if rel, err := filepath.Rel(root, target); err != nil || !filepath.IsLocal(rel) {
		return fmt.Errorf("refusing to write %s: it leads out of the project through a symbolic link (to %s); remove the link, or configure the user's own settings with --user", path, target)
	}
	return nil
}

func (o Options) withDefaults() (Options, error) {
	o.Agent = strings.ToLower(strings.TrimSpace(o.Agent))
	if o.Instance == "" {
		o.Instance = "default"
	}
	if err := identifiers.Validate(o.Instance); err != nil {
		return o, fmt.Errorf("invalid instance name %q: %w", o.Instance, err)
	}
	if o.ServerName == "" {
		o.ServerName = "lima"
	}
	if strings.TrimSpace(o.ServerName) != o.ServerName || strings.ContainsFunc(o.ServerName, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return o, fmt.Errorf("invalid server name %q", o.ServerName)
	}
	if len(o.Command) == 0 {
		o.Command = []string{"limactl", "mcp", "serve", o.Instance}
	}
	if o.Command[0] == "" {
		return o, errors.New("the server command is empty")
	}
	if o.User {
		if o.HomeDir == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return o, fmt.Errorf("cannot find the home directory: %w", err)
			}
			o.HomeDir = home
		}
		if !filepath.IsAbs(o.HomeDir) {
			return o, fmt.Errorf("home directory %q is not an absolute path", o.HomeDir)
		}
		return o, nil
	}
	if o.Workdir == "" {
		return o, errors.New("no project directory given")
	}
	if !filepath.IsAbs(o.Workdir) {
		return o, fmt.Errorf("project directory %q is not an absolute path", o.Workdir)
	}
	info, err := os.Stat(o.Workdir)
	if err != nil {
		return o, fmt.Errorf("project directory: %w", err)
	}
	if !info.IsDir() {
		return o, fmt.Errorf("project directory %s is not a directory", o.Workdir)
	}
	return o, nil
}

// configPath joins the scope's base directory (the project, or the home directory with User)
// with a per-scope relative path.
func (o Options) configPath(project, user string) string {
	if o.User {
		return filepath.Join(o.HomeDir, user)
	}
	return filepath.Join(o.Workdir, project)
}

// newFileMode is the mode for a file Apply creates: a user's own config is private.
func (o Options) newFileMode() os.FileMode {
	if o.User {
		return 0o600
	}
	return 0o644
}

// commandLine renders the server command for messages.
func (o Options) commandLine() string {
	return strings.Join(o.Command, " ")
}

// serverSummary is the one-line summary of a change that adds the MCP server.
func (o Options) serverSummary() string {
	return fmt.Sprintf("MCP server %q runs %q", o.ServerName, o.commandLine())
}
