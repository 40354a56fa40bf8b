package shellcmd

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// How the values of --env and --agent-env reach the command: never on a command line (ssh's
// on the host; the guest shell's, sudo's under a network policy, and so the guest's journal),
// where any user of the machine could read them (ps) or a log keep them. They go on the
// standard input of a session of their own into a file that only the session's guest user
// reads (envWriteScript: 0600, in a new 0700 directory of its 0700 store); the command's
// script, which carries their names alone, reads that file first thing and removes it
// (envReadScript), and only the command itself gets them in its environment.

// envWriteScript writes its standard input to a new file that only the guest user reads and
// prints the file's path. Files of runs that never came to read theirs (the connection lost
// in between) are removed after an hour.
const envWriteScript = `set -e
umask 077
d="$HOME/.cache/limactl-mcp"
mkdir -p "$d"
chmod 700 "$d"
find "$d" -maxdepth 1 -type d -name 'env.*' -mmin +60 -exec rm -rf {} + 2>/dev/null || :
t=$(mktemp -d "$d/env.XXXXXXXXXX")
if ! cat > "$t/env"; then rm -rf "$t"; exit 1; fi
printf '%s\n' "$t/env"
`

// envVar is the shell variable (not exported) that holds the value of the i-th variable
// between the file and the command.
func envVar(i int) string { return fmt.Sprintf("__lmcp_env_%d", i) }

// envFileContent is the file of the values of env (NAME=VALUE words): sh assignments to
// envVar(i), which the command's script sources, and a last line that says it is whole.
func envFileContent(env []string) []byte {
	var b strings.Builder
	for i, kv := range env {
		_, value, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "%s=%s\n", envVar(i), shellquote.Quote(value))
	}
	b.WriteString("__lmcp_env_ok=1\n")
	return []byte(b.String())
}

// envFilePath is what envWriteScript printed: guest output, so checked (an absolute path of
// the form it makes, one line).
var envFilePath = regexp.MustCompile(`^/[^\x00\n]*/\.cache/limactl-mcp/env\.[A-Za-z0-9]{6,}/env$`)

func parseEnvFilePath(out string) (string, error) {
	p := strings.TrimSuffix(out, "\n")
	if len(p) > 4096 || !envFilePath.MatchString(p) || path.Clean(p) != p {
		return "", fmt.Errorf("the guest answered %q, not the path of a file of values", truncate(p, 200))
	}
	return p, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// envReadScript is sh, first in the command's script, that reads the file at p into envVar(i)
// (shell variables, not exported: no process started before the command gets them) and
// removes it with its directory, whatever comes next (a copy that is gone included); without
// the whole file, the command does not run.
func envReadScript(p string) string {
	q, dq := shellquote.Quote(p), shellquote.Quote(path.Dir(p))
	return "set +a\n__lmcp_env_ok=\n" +
		"if [ -f " + q + " ] && [ ! -L " + q + " ]; then . " + q + "; fi\n" +
		"rm -rf -- " + dq + "\n" +
		"if [ \"$__lmcp_env_ok\" != 1 ]; then echo 'limactl-mcp: the values of --env did not reach the guest' >&2; exit 1; fi\n"
}

// envExports is sh that exports the variables named in env (NAME=VALUE words) with their
// values from envVar(i): run only where the command starts next (a subshell that execs it).
func envExports(env []string) string {
	var b strings.Builder
	for i, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "%s=$%s; export %s; ", name, envVar(i), name)
	}
	return b.String()
}
