package shellcmd

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// How the values of --env and --agent-env reach the command: never on a command line (ssh's
// on the host; the guest shell's, sudo's under a network policy, and so the guest's journal),
// where any user of the machine could read them (ps) or a log keep them. Without a terminal,
// they come first on the command's session's standard input, which the command's script,
// carrying their names alone, reads up to a line of its own with the shell's read (one byte
// at a time from a pipe: the rest is the command's; envStdinScript). With a terminal (the
// session's input is the PTY, which would echo them), they go on the standard input of a
// session of their own into a file that only the session's guest user reads (envWriteScript:
// 0600, in a new 0700 directory of its 0700 store), which the command's script reads first
// thing and removes (envReadScript). Either way only the command itself gets them in its
// environment.

// envWriteScript is sh that writes its standard input (lines, each ending in a newline) to a
// new file that only the guest user reads, in the new directory env.NAME of its store, and
// prints the file's path. Files of runs that never came to read theirs (the connection lost
// in between) are removed after an hour. It starts no process but mkdir (and find when such
// files are there): a process costs an emulated guest tens of milliseconds.
func envWriteScript(name string) string {
	return `umask 077
d="$HOME/.cache/limactl-mcp"
[ -d "$d" ] || mkdir -p -m 700 "$d" || exit 1
for o in "$d"/env.*; do
  [ -d "$o" ] && find "$d" -maxdepth 1 -type d -name 'env.*' -mmin +60 -exec rm -rf {} + 2>/dev/null
  break
done
t="$d"/env.` + name + `
mkdir -m 700 "$t" || exit 1
while IFS= read -r l; do printf '%s\n' "$l"; done > "$t/env" || { rm -rf "$t"; exit 1; }
printf '%s\n' "$t/env"
`
}

// envDirName is a new name for the directory of a file of values.
func envDirName() string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

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

// envStdinContent is what goes first on the command's standard input: the assignments of
// envFileContent, then the line end (which no value holds: a random word).
func envStdinContent(env []string, end string) []byte {
	c := envFileContent(env)
	return append(c[:len(c)-len("__lmcp_env_ok=1\n")], end+"\n"...)
}

// envStdinScript is sh, first in the command's script, that reads the assignments of
// envStdinContent from the standard input up to the line end (the shell's read takes one byte
// at a time from a pipe: what follows is left for the command) and runs them: envVar(i) are
// then set, not exported. Without the line end, the command does not run.
func envStdinScript(end string) string {
	return "set +a\n__lmcp_env_ok=; __lmcp_env_in=\n" +
		"while IFS= read -r __lmcp_l; do\n" +
		"  if [ \"$__lmcp_l\" = " + shellquote.Quote(end) + " ]; then __lmcp_env_ok=1; break; fi\n" +
		"  __lmcp_env_in=\"$__lmcp_env_in$__lmcp_l\n\"\n" +
		"done\n" +
		"if [ \"$__lmcp_env_ok\" != 1 ]; then echo 'limactl-mcp: the values of --env did not reach the guest' >&2; exit 1; fi\n" +
		"eval \"$__lmcp_env_in\"\n"
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
