package shellcmd

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// envToPass is the NAME=VALUE list the guest gets: each --env (NAME takes the host's value;
// NAME=VALUE is given as is), then with --agent-env every AgentEnvNames set on the host. A
// NAME not set on the host is an error: it was asked for by name.
func envToPass(opts *Options, lookup func(string) (string, bool)) ([]string, error) {
	var env []string
	seen := map[string]bool{}
	for _, w := range opts.Env {
		name, value, hasValue := strings.Cut(w, "=")
		if !shellquote.IsName(name) {
			return nil, fmt.Errorf("--env %q: not a variable name (NAME or NAME=VALUE, NAME made of letters, digits and _)", w)
		}
		if !hasValue {
			v, ok := lookup(name)
			if !ok {
				return nil, fmt.Errorf("--env %s: %s is not set on the host; set it, or give its value: --env %s=VALUE", name, name, name)
			}
			value = v
		}
		if !seen[name] {
			seen[name] = true
			env = append(env, name+"="+value)
		}
	}
	if opts.AgentEnv {
		for _, name := range AgentEnvNames {
			if v, ok := lookup(name); ok && !seen[name] {
				seen[name] = true
				env = append(env, name+"="+v)
			}
		}
	}
	return env, nil
}

// withoutNames is env (NAME=VALUE) without the variables names.
func withoutNames(env []string, names []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}

// warnValuesEnterVM says on w which of env are API keys whose values now enter the VM, where
// the agent can read them and send them anywhere the network lets it.
func warnValuesEnterVM(w io.Writer, env []string) {
	var keys []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(secrets.AgentSecretNames, name) {
			keys = append(keys, name)
		}
	}
	if len(keys) > 0 {
		fmt.Fprintf(w, "limactl-mcp: warning: the values of %s enter the VM, where the agent (and whatever it is made to run) can read them; --agent-secrets (or --secret NAME) keeps them on the host\n", strings.Join(keys, ", "))
	}
}

// agentEnvSet says whether env holds one of AgentEnvNames.
func agentEnvSet(env []string) bool {
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		for _, n := range AgentEnvNames {
			if n == name {
				return true
			}
		}
	}
	return false
}

// termFallback is sh that keeps TERM when the guest has its terminfo, and otherwise takes
// xterm-256color or vt100 (whichever the guest has), saying so on stderr.
const termFallback = `ti() {
  if command -v infocmp >/dev/null 2>&1; then infocmp "$1" >/dev/null 2>&1; return; fi
  c=$(printf %.1s "$1"); x=$(printf %x "'$c")
  for d in "$HOME/.terminfo" /etc/terminfo /lib/terminfo /usr/share/terminfo /usr/lib/terminfo; do
    if [ -e "$d/$c/$1" ] || [ -e "$d/$x/$1" ]; then return 0; fi
  done
  return 1
}
if [ -n "${TERM-}" ] && ! ti "$TERM"; then
  for t in xterm-256color vt100; do
    if ti "$t"; then echo "limactl-mcp: the guest has no terminfo for TERM=$TERM; using TERM=$t" >&2; TERM=$t; export TERM; break; fi
  done
fi
`

// commandScript is the sh the guest runs for the command, after the check of the guest copy:
// go to dir (the same absolute path as on the host, unless the copy had to be relocated), take
// the environment asked for (env: NAME=VALUE words, whose values envReadScript read earlier:
// here only their names; the variables are exported in the process that becomes the command,
// so that no other process has them), and run the command through the user's login shell (or
// shell), as `limactl shell` does, then after (the probe); without a command, the login shell
// itself.
// An interactive login shell on a terminal is exec'd; anything else runs under this shell,
// so that after runs and a command killed by a signal exits 128+N, as a shell reports it (ssh
// reports a session ended by a signal as its own failure, 255). This shell survives a Ctrl-C
// meant for the command (a handler, which the command does not inherit), and ends with it on
// a hangup, as the session leader. mark (when not "") is set in the environment of every
// process the command starts: the previews find its dev servers by it (previews.go).
func commandScript(dir, shell string, command, env []string, tty bool, after, mark string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cd %s || exit 1\n", shellquote.Quote(dir))
	if mark != "" {
		fmt.Fprintf(&b, "%s=%s; export %s\n", runnerproto.ShellMarkVar, shellquote.Quote(mark), runnerproto.ShellMarkVar)
	}
	if tty {
		b.WriteString(termFallback)
	}
	sh := `"$SHELL"`
	if shell != "" {
		sh = shellquote.Quote(shell)
	}
	if tty && len(command) == 0 && after == "" {
		fmt.Fprintf(&b, "%sexec %s -l\n", envExports(env), sh)
		return b.String()
	}
	run := sh + " -l"
	if len(command) > 0 {
		run += " -c " + shellquote.Quote(shellquote.JoinCommand(command))
	}
	if len(env) > 0 {
		// A subshell that becomes the command: this shell, which runs after, never exports them.
		run = "(" + envExports(env) + "exec " + run + ")"
	}
	fmt.Fprintf(&b, "trap : INT QUIT\n%s\ns=$?\n%sexit $s\n", run, after)
	return b.String()
}
