package shellcmd

import (
	"os"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/terminal"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/timeline"
)

// recordCommand records the command shell ran in the session's timeline: the command line
// (an interactive shell: "(interactive shell)"), the guest directory, when, how long, its
// exit status. The environment is not recorded, and the values passed to the guest (env,
// NAME=VALUE: --env, --agent-env) are redacted wherever the command line holds them, as are
// those of the host's secret-looking variables.
func recordCommand(sess *staging.Session, opts *Options, guestDir string, env []string, start time.Time, status terminal.ExitStatus, err error) {
	e := timeline.Event{Time: start, Kind: timeline.Command, Dir: guestDir, DurationMS: float64(time.Since(start).Microseconds()) / 1000}
	if len(opts.Command) > 0 {
		e.Command = shellquote.JoinCommand(opts.Command)
	} else {
		e.Command = "(interactive shell)"
	}
	if err != nil {
		e.Error = err.Error()
	} else {
		code := int(status)
		e.Exit = &code
	}
	values := opts.redact
	for _, kv := range env {
		if _, v, ok := strings.Cut(kv, "="); ok {
			values = append(values, v)
		}
	}
	timeline.Open(sess.Store().SessionDir(sess.State.ID), "shell", timeline.FromEnviron(os.Environ(), values...)).Record(e)
}
