package guest_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sshd"
)

// ReadFile never blocks on a special file and never reads past its limit, with the runner and
// over SFTP alone: a fifo nobody writes, a link to /dev/zero, the device itself, a directory.
func TestReadFileBoundedAndRegularOnly(t *testing.T) {
	modes(t, func(t *testing.T, srv *sshd.Server, c *guest.Conn) {
		d := fmt.Sprintf("%s/rf-%s-%d", srv.Home, strings.ReplaceAll(t.Name(), "/", "-"), os.Getpid()) // the pid: another test process (a second checkout) shares this home
		srv.Run(t, "bash", "-c", "rm -rf "+d+" && mkdir -p "+d+" && cd "+d+" && printf hello > small && head -c 100000 /dev/zero > big && mkfifo fifo && ln -s /dev/zero zero && mkdir dir && ln -s small link")
		ctx := context.Background()
		data, err := c.ReadFile(ctx, d+"/small", 5)
		if err != nil || string(data) != "hello" {
			t.Fatalf("small: %q, %v", data, err)
		}
		if _, err := c.ReadFile(ctx, d+"/big", 1000); !errors.Is(err, guest.ErrTooLarge) {
			t.Errorf("big over the limit: %v, want ErrTooLarge", err)
		}
		if _, err := c.ReadFile(ctx, d+"/missing", 10); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("missing: %v, want fs.ErrNotExist", err)
		}
		for _, name := range []string{"fifo", "zero", "dir", "link", "/dev/zero"} {
			p := d + "/" + name
			if strings.HasPrefix(name, "/") {
				p = name
			}
			start := time.Now()
			done := make(chan error, 1)
			go func() { _, err := c.ReadFile(ctx, p, 1<<20); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, guest.ErrNotRegular) {
					t.Errorf("%s: %v, want ErrNotRegular", name, err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: ReadFile blocked on a special file", name)
			}
			t.Logf("%s refused in %s", name, time.Since(start).Round(time.Millisecond))
		}
	})
}

// OpenFile streams a regular file larger than one runner frame exactly, and refuses what is
// not a regular file without blocking, with the runner and over SFTP alone; a read ends when
// its context does.
func TestOpenFileStreamsRegularOnly(t *testing.T) {
	modes(t, func(t *testing.T, srv *sshd.Server, c *guest.Conn) {
		d := fmt.Sprintf("%s/of-%s-%d", srv.Home, strings.ReplaceAll(t.Name(), "/", "-"), os.Getpid())
		// 9 MB + 3 bytes: chunks of 4 MB, the last one short.
		srv.Run(t, "bash", "-c", "rm -rf "+d+" && mkdir -p "+d+" && cd "+d+" && head -c 9437187 /dev/urandom > big && : > empty && mkfifo fifo && ln -s /dev/zero zero && mkdir dir && ln -s big link")
		t.Cleanup(func() { srv.Run(t, "rm", "-rf", d) })
		want := srv.Run(t, "sha256sum", d+"/big")[:64]
		ctx := context.Background()
		r, err := c.OpenFile(ctx, d+"/big")
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		n, err := io.Copy(h, r)
		r.Close()
		if err != nil || n != 9437187 || hex.EncodeToString(h.Sum(nil)) != want || r.Size() != 9437187 {
			t.Errorf("big: %d bytes (size %d), %v, hash match %v", n, r.Size(), err, hex.EncodeToString(h.Sum(nil)) == want)
		}
		r, err = c.OpenFile(ctx, d+"/empty")
		if err != nil {
			t.Fatal(err)
		}
		if data, err := io.ReadAll(r); err != nil || len(data) != 0 {
			t.Errorf("empty: %d bytes, %v", len(data), err)
		}
		r.Close()
		if _, err := c.OpenFile(ctx, d+"/missing"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("missing: %v, want fs.ErrNotExist", err)
		}
		for _, name := range []string{"fifo", "zero", "dir", "link"} {
			done := make(chan error, 1)
			go func() {
				r, err := c.OpenFile(ctx, d+"/"+name)
				if err == nil {
					r.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, guest.ErrNotRegular) {
					t.Errorf("%s: %v, want ErrNotRegular", name, err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: OpenFile blocked on a special file", name)
			}
		}
		cctx, cancel := context.WithCancel(ctx)
		r, err = c.OpenFile(cctx, d+"/big")
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		if _, err := io.Copy(io.Discard, r); !errors.Is(err, context.Canceled) {
			t.Errorf("a read after the context ended: %v", err)
		}
		r.Close()
	})
}
