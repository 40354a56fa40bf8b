package guest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerclient"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

// A runner the agent replaced answers a checkpoint manifest without its checkpoint: the host
// (review --since, through staging.ChangesSince) read the checkpoint's time and id from it and
// panicked. The reply is now refused with a clear error, over a real sshd.
func TestHostileRunnerManifestWithoutCheckpoint(t *testing.T) {
	srv := sshd.Start(t)
	c, _ := withFakeRunner(t, srv, "ckpt-bare")
	bounded(t, time.Minute, func() {
		m, err := c.CkptManifest(context.Background(), runnerproto.CkptManifestRequest{Session: "s", ID: "1", MaxEntries: 10})
		if err == nil {
			t.Fatalf("a manifest without its checkpoint was taken (checkpoint %v): review --since reads m.Checkpoint.TimeMillis from it", m.Checkpoint)
		}
		if !errors.Is(err, runnerclient.ErrBadReply) {
			t.Errorf("not a malformed-reply error: %v", err)
		}
		t.Logf("%v", err)
	})
}
