package guest

import (
	"context"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerclient"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// backend is how a link does what the façade asks of the guest: through the guest runner
// (runnerBackend), or, when the runner is off or could not start on a connection of our own,
// without it (sessionBackend: SFTP for files, one SSH session per command, as `limactl shell`
// does). Chosen once, when the link is made; the façade's methods never ask which.
type backend interface {
	// runner is the runner, or ErrNoRunner for the operations that need it.
	runner() (*runnerclient.Client, error)
	exec(ctx context.Context, l *link, req ExecRequest) (*runnerproto.ExecResult, error)
	readFile(ctx context.Context, c *Conn, l *link, path string, limit int64) ([]byte, error)
	openFile(ctx context.Context, c *Conn, l *link, r *FileReader) error
	writeFile(ctx context.Context, c *Conn, l *link, p string, data []byte, mode uint32, makeParents bool) error
	edit(ctx context.Context, c *Conn, l *link, q runnerproto.EditRequest) (*runnerproto.EditResult, error)
	glob(ctx context.Context, c *Conn, l *link, dir, pattern string, maxMatches int) (*runnerproto.GlobResult, error)
	grep(ctx context.Context, c *Conn, l *link, req runnerproto.GrepRequest) (*runnerproto.GrepResult, error)
	// idle says whether no call is waiting for an answer.
	idle() bool
	close()
}

// runnerBackend does everything through the runner r.
type runnerBackend struct{ r *runnerclient.Client }

func (b runnerBackend) runner() (*runnerclient.Client, error) { return b.r, nil }
func (b runnerBackend) idle() bool                            { return b.r.Idle() }
func (b runnerBackend) close()                                { b.r.Close() }

// sessionBackend does without the runner.
type sessionBackend struct{}

func (sessionBackend) runner() (*runnerclient.Client, error) { return nil, ErrNoRunner }
func (sessionBackend) idle() bool                            { return true }
func (sessionBackend) close()                                {}
