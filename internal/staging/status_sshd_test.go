package staging_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/staging"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/guesttest"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// `status --session NAME` reads only that name's sessions from the guest (issue 30: status
// read every session of the instance, each a scan of its copy, and dropped the others after).
func TestStatusesReadOnlyTheKeptSessions(t *testing.T) {
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n"})
	f.AddSession("alpha")
	f.AddSession("beta")
	conn := guesttest.Connect(t, f.Srv, guest.Options{NoLoginShell: true})
	var read atomic.Int32
	connFor := func(*staging.State) (*guest.Conn, func()) { read.Add(1); return conn, func() {} }
	all, err := staging.Statuses(context.Background(), conn, connFor, f.Store, nil, nil)
	if err != nil || len(all) != 3 || read.Load() != 3 {
		t.Fatalf("every session: %d statuses, %d read, %v", len(all), read.Load(), err)
	}
	read.Store(0)
	only, err := staging.Statuses(context.Background(), conn, connFor, f.Store, nil, func(st *staging.State) bool { return st.Session == "alpha" })
	if err != nil || len(only) != 1 || only[0].Session != "alpha" || only[0].Error != "" {
		t.Fatalf("--session alpha: %+v, %v", only, err)
	}
	if n := read.Load(); n != 1 {
		t.Errorf("--session alpha read %d sessions from the guest, want 1", n)
	}
}
