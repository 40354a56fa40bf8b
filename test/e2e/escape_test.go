//go:build e2e

package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe/termsafetest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/toolsuite"
)

// The agent forges an entry of a checkpoint's manifest whose name is every kind of terminal
// control (the store is its own to write); `limactl mcp restore` fails on it, and what it
// prints holds none of them raw (before: the window title set, the screen cleared, the
// clipboard written by the runner's error, through the top-level printer).
func TestRestoreForgedManifestPrintsSafely(t *testing.T) {
	dir := project(t, map[string]string{"a.txt": "a\n"})
	chownToUser(t, dir)
	discardOnCleanup(t, dir)
	s := startServerIn(t, dir, nil, "limactl-mcp", "serve", instanceName)
	r := toolsuite.MustOK(t, s.Session, "checkpoint", map[string]any{"label": "start"})
	id := fmt.Sprint(r.Structured["id"])
	forged := "zz-" + strings.NewReplacer("/", "_", "\x00", "").Replace(termsafetest.All())
	line := "f 644 4 0 0 0 " + strings.Repeat("ab", 32) + " " + strconv.QuoteToASCII(forged)
	manifest := fmt.Sprintf(".cache/limactl-mcp/checkpoints/%s/manifests/%s", staging.SessionID(dir), id)
	guestShell(t, "cd && printf '%s\\n' "+shq(line)+" >> "+shq(manifest))
	shellOK(t, s.Session, dir, "echo agent > a.txt")

	out, stderr, code := plugin(t, dir, "restore", instanceName, id)
	termsafetest.Check(t, "restore (stdout)", []byte(out))
	termsafetest.Check(t, "restore (stderr)", []byte(stderr))
	if code == 0 || !strings.Contains(stderr, "zz-") {
		t.Errorf("restore of a forged checkpoint: exit %d\n%s\n%s", code, out, stderr)
	}
	t.Logf("restore said: %s", stderr)
}
