package guest_test

import (
	"context"
	"errors"
	"io/fs"
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
		d := srv.Home + "/rf-" + strings.ReplaceAll(t.Name(), "/", "-")
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
