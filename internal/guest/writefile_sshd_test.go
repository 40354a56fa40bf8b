package guest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

// A host that dies in the middle of a write (its connection cut at a random moment, as when
// `serve` is killed with -9) leaves the guest file with its old content or its new one, never
// a mix: through the runner a file is replaced, not rewritten in place. Each run cuts the
// connection at another moment (seeded, so a failure can be replayed).
func TestWriteFileSurvivesAHostKilledMidCall(t *testing.T) {
	srv := sshd.Start(t)
	p := fmt.Sprintf("%s/torn-%d", srv.Home, time.Now().UnixNano())
	t.Cleanup(func() { srv.Run(t, "rm", "-f", p) })
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	contents := [][]byte{bytes.Repeat([]byte("old\n"), 1<<20), bytes.Repeat([]byte("new!\n"), 2<<20)}
	sums := map[string]string{sum(contents[0]): "old", sum(contents[1]): "new"}
	ctx := context.Background()
	if err := guesttest.Connect(t, srv, guest.Options{}).WriteFile(ctx, p, contents[0], 0o644, false); err != nil {
		t.Fatal(err)
	}
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	seen := map[string]int{}
	for i := range 12 {
		c := guesttest.Connect(t, srv, guest.Options{})
		if _, err := c.Home(ctx); err != nil { // connected, runner up: the cut lands in the write
			t.Fatal(err)
		}
		done := make(chan error, 1)
		data := contents[(i+1)%2]
		go func() { done <- c.WriteFile(ctx, p, data, 0o644, false) }()
		time.Sleep(time.Duration(rng.Intn(300)) * time.Millisecond)
		c.Close()
		<-done
		// The runner finishes a write whose request it received: wait for it to settle.
		var got string
		for deadline := time.Now().Add(10 * time.Second); ; {
			got = strings.Fields(srv.Run(t, "sh", "-c", "sha256sum "+p+"; ls -a $(dirname "+p+") | grep -c 'limactl-mcp-' || true"))[0]
			leftovers := strings.TrimSpace(srv.Run(t, "sh", "-c", "ls -a $(dirname "+p+") | grep -c '^\\.torn-.*limactl-mcp-' || true"))
			if leftovers == "0" || time.Now().After(deadline) {
				if leftovers != "0" {
					t.Errorf("cut %d (seed %d): a temporary file was left beside the file", i, seed)
				}
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		what, ok := sums[got]
		if !ok {
			t.Fatalf("cut %d (seed %d): the file is neither the old content nor the new (sha256 %s)", i, seed, got)
		}
		seen[what]++
	}
	t.Logf("seed %d: after 12 cut writes the file held: %v", seed, seen)
}

// A full disk is a clear error, errors.Is-able, and leaves the file as it was.
func TestWriteFileErrorsNameTheErrno(t *testing.T) {
	srv := sshd.Start(t)
	c := guesttest.Connect(t, srv, guest.Options{})
	ctx := context.Background()
	err := c.WriteFile(ctx, srv.Home+"/no-such-dir-"+fmt.Sprint(time.Now().UnixNano())+"/f", []byte("x"), 0o644, false)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing parent: %v", err)
	}
	err = c.WriteFile(ctx, srv.Home, []byte("x"), 0o644, false)
	if !errors.Is(err, syscall.EISDIR) {
		t.Errorf("a directory: %v", err)
	}
	// /dev/full answers every write with ENOSPC; written through a link, in place.
	link := fmt.Sprintf("%s/full-%d", srv.Home, time.Now().UnixNano())
	srv.Run(t, "ln", "-s", "/dev/full", link)
	t.Cleanup(func() { srv.Run(t, "rm", "-f", link) })
	err = c.WriteFile(ctx, link, []byte("x"), 0o644, false)
	if !errors.Is(err, guest.ErrNotRegular) {
		t.Errorf("a device through a link: %v", err)
	}
}
