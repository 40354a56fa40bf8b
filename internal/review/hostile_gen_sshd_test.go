package review_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/hostile"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

// The generator of hostile trees: random guest states built from the attack vocabulary of the
// threat model (internal/testutil/hostile), reviewed with accept-all while the person edits
// some host files, and the host invariant checked afterwards by walking the host.
// `-hostile.count N -hostile.seed S` runs other states; a failure names its seed.
var (
	hostileCount = flag.Int("hostile.count", 100, "hostile guest states to generate")
	hostileSeed  = flag.Int64("hostile.seed", 1, "first seed")
)

func TestHostileTreesAcceptAll(t *testing.T) {
	srv := sshd.Start(t)
	conn := guesttest.Connect(t, srv, guest.Options{})
	store := staging.Store{Dir: filepath.Join(t.TempDir(), "state")}
	checks, ops := 0, 0
	start := time.Now()
	for seed := *hostileSeed; seed < *hostileSeed+int64(*hostileCount); seed++ {
		c, o := hostileState(t, srv, conn, store, seed)
		checks, ops = checks+c, ops+o
		if t.Failed() {
			t.Fatalf("seed %d broke the host invariant (replay: go test ./internal/review -run TestHostileTreesAcceptAll -hostile.seed %d -hostile.count 1)", seed, seed)
		}
	}
	t.Logf("%d hostile states (%d guest operations), %d host checks, in %s", *hostileCount, ops, checks, time.Since(start).Round(time.Second))
}

// hostileState makes one state, accepts everything, and checks the host; it returns the host
// checks and the guest operations it made.
func hostileState(t *testing.T, srv *sshd.Server, conn *guest.Conn, store staging.Store, seed int64) (int, int) {
	r := rand.New(rand.NewSource(seed))
	c := hostile.Setup(t, filepath.Join(t.TempDir(), fmt.Sprintf("s%d", seed)), r.Intn(2) == 0)
	gpath := fmt.Sprintf("%s/hostile-%d-%d/w", srv.Home, seed, time.Now().UnixNano())
	defer srv.Run(t, "rm", "-rf", filepath.Dir(gpath))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sess, _, err := staging.Open(ctx, conn, store, staging.OpenOptions{Workdir: c.Host, GuestPath: gpath})
	must(t, err)
	defer func() { _ = sess.Discard(context.Background()) }()
	ops := hostile.Ops(r, c.Mark)
	what := fmt.Sprintf("seed %d (ops %q)", seed, ops)
	srv.Run(t, "bash", "-c", "cd "+gpath+" && { "+strings.Join(ops, "; ")+"; } 2>/dev/null; true")

	c.Snap(t)
	cs, err := review.Build(ctx, sess, nil)
	if err != nil {
		t.Errorf("%s: Build: %v", what, err)
		return 0, len(ops)
	}
	// The person edits some host files while the review is open: each must survive.
	for _, it := range cs.Items {
		if it.Host != nil && it.Host.Type == "file" && r.Intn(3) == 0 {
			data := fmt.Sprintf("person's edit %d\n", r.Int())
			if os.WriteFile(filepath.Join(c.Host, filepath.FromSlash(it.Path)), []byte(data), 0o644) == nil {
				c.Edits[it.Path] = data
			}
		}
	}
	rep, err := review.Apply(ctx, sess, cs, acceptAll(cs))
	if err != nil {
		t.Errorf("%s: Apply: %v", what, err)
		return 0, len(ops)
	}
	n := c.Check(t, what)
	// Nothing silently lost: what was accepted and not written is still pending.
	cs2, err := review.Build(ctx, sess, nil)
	if err != nil {
		t.Errorf("%s: second Build: %v", what, err)
		return n, len(ops)
	}
	written := map[string]bool{}
	for _, w := range rep.Written {
		written[w] = true
	}
	pending := map[string]bool{}
	for _, it := range append(cs2.Items, cs2.Ignored...) {
		pending[it.Path] = true
	}
	for _, it := range cs.Items {
		n++
		if !written[it.Display] && !pending[it.Path] && c.Edits[it.Path] == "" && !alreadyOnHost(c.Host, it) {
			t.Errorf("%s: %q was neither written nor left pending (refused: %v)", what, it.Path, rep.Refused)
		}
	}
	return n, len(ops)
}

// alreadyOnHost says whether the host has the guest's side of an item without a write (a
// deletion of what is gone, a directory that is there).
func alreadyOnHost(host string, it *review.Item) bool {
	fi, err := os.Lstat(filepath.Join(host, filepath.FromSlash(it.Path)))
	if it.Guest == nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	return err == nil && it.Guest.Type == "dir" && fi.IsDir()
}
