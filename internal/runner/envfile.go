package runner

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/limactl-mcp/limactl-mcp/internal/runner/procenv"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
)

// maxEnvFile bounds the environment file a runner is started with.
const maxEnvFile = 64 << 10

// ApplyEnvFile adds the variables of path (KEY=VALUE lines; blank lines and # comments
// skipped) to the runner's environment before anything reads it, so that the commands it runs
// and the login shell it starts inherit them. Under a network policy that file is root's and
// holds the agent's proxy settings; the agent can still change them in its own commands, which
// only takes the proxy away from itself: the firewall, not these variables, is the policy.
func ApplyEnvFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxEnvFile+1))
	if err != nil {
		return err
	}
	if len(data) > maxEnvFile {
		return fmt.Errorf("%s is larger than %d bytes", path, maxEnvFile)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !shellquote.IsName(k) {
			return fmt.Errorf("%s:%d: not a NAME=VALUE line", path, n)
		}
		if err := procenv.Set(k, v); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}
