package statuscmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/sessionopen"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
)

// A session under a network policy has a Docker daemon of its own (docs/docker.md): status
// lists its running containers, asked of the daemon as the session's agent user (its own
// connection, with DOCKER_HOST in its environment), never as root through a path in the
// agent's home.

// dockerPSScript prints the session's running containers, one "NAME\tIMAGE\tSTATUS" line each;
// nothing when the agent has no daemon (no DOCKER_HOST: no Docker in the guest, or open);
// exit 3 when the daemon does not answer.
const dockerPSScript = `[ -n "$DOCKER_HOST" ] && command -v docker >/dev/null || exit 0
docker ps --format '{{.Names}}\t{{.Image}}\t{{.Status}}' 2>/dev/null || exit 3`

// maxContainerLines bounds how many containers a session's status lists.
const maxContainerLines = 50

// containerReport is what status says of a session's containers.
type containerReport struct {
	Lines []string // NAME  IMAGE  STATUS, guest text, printed through termsafe
	More  int      // containers past maxContainerLines
	Error string   // the daemon did not answer ("": it did, or there is none)
}

// sessionContainers asks the daemon of the session (conn: its agent's connection) for its
// running containers, within 20 s; nil when the session has no daemon.
func sessionContainers(ctx context.Context, conn *guest.Conn) *containerReport {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err := conn.Exec(ctx, guest.ExecRequest{Argv: []string{"sh", "-c", dockerPSScript}, Dir: "/", Timeout: 15 * time.Second, HeadBytes: 16 << 10})
	if err != nil {
		return &containerReport{Error: "the session's connection did not answer"}
	}
	out := res.Stdout.Head
	if res.Stdout.Total > int64(len(out)) {
		// Cut short: the last line may be partial.
		if i := strings.LastIndexByte(string(out), '\n'); i >= 0 {
			out = out[:i+1]
		}
	}
	return parseContainers(res.ExitCode, string(out))
}

// allContainers asks each session under a policy for its containers, several at once; the
// result is by index in sts (nil: nothing to say).
func allContainers(ctx context.Context, t *sessionopen.Target, sts []staging.SessionStatus) []*containerReport {
	out := make([]*containerReport, len(sts))
	if t.Conn == nil {
		return out // the instance is not running
	}
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, s := range sts {
		if !restricted(s) || s.Error != "" {
			continue
		}
		st, _, err := t.Store.LoadSession(s.Workdir, s.Session)
		if err != nil || st == nil {
			continue
		}
		conn := t.ConnFor(st)
		if conn == nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = sessionContainers(ctx, conn)
		}()
	}
	wg.Wait()
	return out
}

// parseContainers reads dockerPSScript's answer.
func parseContainers(exit int, stdout string) *containerReport {
	switch {
	case exit == 3:
		return &containerReport{Error: "its Docker daemon does not answer (it starts in the background when the session is set up)"}
	case exit != 0:
		return &containerReport{Error: fmt.Sprintf("docker ps exited with %d", exit)}
	}
	r := &containerReport{}
	for _, line := range strings.Split(stdout, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if len(r.Lines) == maxContainerLines {
			r.More++
			continue
		}
		if len(line) > 300 {
			line = line[:300]
		}
		r.Lines = append(r.Lines, strings.Join(strings.Split(line, "\t"), "  "))
	}
	return r
}

// printContainers writes a session's containers lines (nothing for nil: no daemon).
func printContainers(w io.Writer, r *containerReport) {
	switch {
	case r == nil:
	case r.Error != "":
		fmt.Fprintf(w, "  containers: unknown (%s)\n", r.Error)
	case len(r.Lines) == 0:
		fmt.Fprintf(w, "  containers: none running\n")
	default:
		fmt.Fprintf(w, "  containers: %d running\n", len(r.Lines)+r.More)
		for _, l := range r.Lines {
			fmt.Fprintf(w, "    %s\n", termsafe.String(l))
		}
		if r.More > 0 {
			fmt.Fprintf(w, "    … and %d more\n", r.More)
		}
	}
}

// restricted says whether a session runs under a network policy (and so may have a daemon).
func restricted(s staging.SessionStatus) bool {
	return s.Network != nil && s.Network.Policy != staging.OpenNetwork
}
