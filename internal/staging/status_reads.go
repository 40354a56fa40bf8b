package staging

import (
	"context"
	"sync"

	"github.com/limactl-mcp/limactl-mcp/internal/guest"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// statusReads are what `status` reads once for all its sessions under a network policy, through
// the Lima user's connection, where reading it for each cost one guest process or more per
// session (a sudo is 0.3 s of PAM on an emulated guest, an ssh session through the master
// about as much):
//   - the network records of their agent users, with one sudo (guest.Conn.NetRecords, `net
//     report --users`). A user the batch gives no line for (cut at the output's cap: another
//     agent's record filled it), or a batch that fails as a whole, is read alone (netRecord);
//   - the guest's socket tables (/proc/net: the kernel's, the same whoever reads them; the agents
//     share the guest's network namespace), parsed for each agent's uid.
type statusReads struct {
	lima  *guest.Conn
	users []string

	recordsOnce sync.Once
	lines       map[string][]byte

	tables func() (string, error)
}

func newStatusReads(ctx context.Context, lima *guest.Conn, states []*State) *statusReads {
	b := &statusReads{lima: lima}
	for _, st := range states {
		if NetworkOf(st) != OpenNetwork && len(b.users) < netpolicy.MaxReportEach {
			b.users = append(b.users, AgentUser(st.ID))
		}
	}
	b.tables = listenTables(ctx, lima)
	return b
}

// record is user's network record.
func (b *statusReads) record(ctx context.Context, user string) (netpolicy.Record, error) {
	b.recordsOnce.Do(func() {
		b.lines = map[string][]byte{}
		if len(b.users) < 2 {
			return // one sudo either way
		}
		lines, err := b.lima.NetRecords(ctx, b.users)
		if err != nil {
			return
		}
		for i, u := range b.users {
			if lines[i] != nil {
				b.lines[u] = lines[i]
			}
		}
	})
	if line, ok := b.lines[user]; ok {
		return netpolicy.ParseRecordLine(line, user)
	}
	return netRecord(ctx, b.lima, user, 0)
}

// listeners are the sockets uid listens on.
func (b *statusReads) listeners(uid int) ([]ListenPort, error) { return listenersIn(b.tables, uid) }
