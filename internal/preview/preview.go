// Package preview makes the ports a session's background processes listen on in the guest
// reachable from the host: for each, a listener on the host's loopback (or the address
// `serve --publish` names) whose every connection is carried over the session's SSH
// connection to the guest port (ssh's direct-tcpip, the same as `ssh -L`). The forwards live
// as long as the server that made them and as the process listens; a record of them, one file
// per server under the instance's state on the host, is what `limactl mcp ports` and `status`
// read.
//
// Why not only Lima's automatic port forwarding: it forwards each guest port to the same port
// on the host, so two sessions (or two instances) serving on one port collide and the second
// is silently not forwarded; nothing tells us which instance a host port reaches; and it is
// off in some setups (plain mode, portForwards rules). Our own forward always reaches this
// session's process, and says when it had to take another host port.
package preview

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// DialFunc opens a connection from the guest to addr ("127.0.0.1:8000").
type DialFunc func(ctx context.Context, addr string) (io.ReadWriteCloser, error)

// Options configure a Forwarder.
type Options struct {
	// Dial reaches the guest (guest.Conn.DialGuest).
	Dial DialFunc
	// Publish is the host address the forwards listen on ("": 127.0.0.1).
	Publish string
	// Record, when set, is where the forwards are recorded for other commands (Record).
	Record *RecordFile
	Logger *slog.Logger
}

// Port is one forward: a guest port and the host URL that reaches it.
type Port struct {
	ID        int    `json:"id"` // the background process's
	GuestPort int    `json:"guest_port"`
	GuestAddr string `json:"guest_addr"` // what it is bound to in the guest
	HostPort  int    `json:"host_port"`
	HostURL   string `json:"host_url"`
	// Moved says the host port differs from the guest's (that one was taken on the host).
	Moved bool `json:"moved,omitempty"`
}

// Forwarder holds the forwards of one server.
type Forwarder struct {
	opts Options

	mu     sync.Mutex
	fwds   map[string]*forward // by guest dial address
	closed bool
}

type forward struct {
	Port
	ln     net.Listener
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a Forwarder; it checks Publish (an IP address).
func New(opts Options) (*Forwarder, error) {
	if opts.Publish == "" {
		opts.Publish = "127.0.0.1"
	}
	if _, err := ParsePublish(opts.Publish); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Forwarder{opts: opts, fwds: map[string]*forward{}}, nil
}

// ParsePublish checks a --publish address: an IP address, without a port or a zone.
func ParsePublish(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("--publish %q: want a host IP address to listen on, such as 127.0.0.1 (the default: this machine only), 0.0.0.0 (every interface: anyone who reaches this machine reaches the agent's servers) or 192.168.1.5", s)
	}
	return a, nil
}

// dialAddr is where in the guest a socket bound to p is reached: its loopback for a wildcard.
func dialAddr(p runnerproto.BgPort) string {
	a, err := netip.ParseAddr(p.Addr)
	switch {
	case err != nil:
		return ""
	case a == netip.IPv4Unspecified():
		a = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	case a == netip.IPv6Unspecified():
		a = netip.IPv6Loopback()
	}
	return net.JoinHostPort(a.String(), strconv.Itoa(p.Port))
}

// Sync makes the forwards match the listening ports of the running processes (by id): one
// for each port not yet forwarded, and none left for a port no longer listened on. It returns
// the forwards of each id. A port that cannot be forwarded is left out and logged.
func (f *Forwarder) Sync(listening map[int][]runnerproto.BgPort) map[int][]Port {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[int][]Port{}
	if f.closed {
		return out
	}
	want := map[string]bool{}
	for id, ports := range listening {
		for _, p := range ports {
			addr := dialAddr(p)
			if addr == "" || want[addr] {
				continue
			}
			// One socket on 0.0.0.0 and one on :: of the same port: one forward (the first).
			if slices.ContainsFunc(ports, func(q runnerproto.BgPort) bool { return q.Port == p.Port && want[dialAddr(q)] }) {
				continue
			}
			want[addr] = true
			fw := f.fwds[addr]
			if fw != nil && fw.ID != id {
				f.stop(fw) // another process listens there now
				fw = nil
			}
			if fw == nil {
				var err error
				if fw, err = f.start(id, p, addr); err != nil {
					f.opts.Logger.Warn("cannot forward a guest port to the host", "port", p.Port, "error", err)
					continue
				}
			}
			out[id] = append(out[id], fw.Port)
		}
	}
	for addr, fw := range f.fwds {
		if !want[addr] {
			f.stop(fw)
		}
	}
	f.saveLocked()
	return out
}

// Ports lists the forwards (by id, then guest port).
func (f *Forwarder) Ports() []Port {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.portsLocked()
}

func (f *Forwarder) portsLocked() []Port {
	out := make([]Port, 0, len(f.fwds))
	for _, fw := range f.fwds {
		out = append(out, fw.Port)
	}
	slices.SortFunc(out, func(a, b Port) int {
		if a.ID != b.ID {
			return a.ID - b.ID
		}
		return a.GuestPort - b.GuestPort
	})
	return out
}

// Close ends every forward and removes the record.
func (f *Forwarder) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fw := range f.fwds {
		f.stop(fw)
	}
	f.closed = true
	if f.opts.Record != nil {
		f.opts.Record.Remove()
	}
}

// start listens on the host for guest address addr: on the guest's port number when it is
// free on the host, else on one the system picks.
func (f *Forwarder) start(id int, p runnerproto.BgPort, addr string) (*forward, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(f.opts.Publish, strconv.Itoa(p.Port)))
	if err != nil {
		if ln, err = net.Listen("tcp", net.JoinHostPort(f.opts.Publish, "0")); err != nil {
			return nil, err
		}
	}
	hostPort := ln.Addr().(*net.TCPAddr).Port
	host := f.opts.Publish
	if a, _ := netip.ParseAddr(host); a.IsUnspecified() {
		host = "localhost" // listening everywhere: this machine reaches it as localhost
	}
	ctx, cancel := context.WithCancel(context.Background())
	fw := &forward{Port: Port{ID: id, GuestPort: p.Port, GuestAddr: p.Addr, HostPort: hostPort,
		HostURL: "http://" + net.JoinHostPort(host, strconv.Itoa(hostPort)), Moved: hostPort != p.Port}, ln: ln, cancel: cancel}
	f.fwds[addr] = fw
	fw.wg.Add(1)
	go func() {
		defer fw.wg.Done()
		f.serve(ctx, fw, addr)
	}()
	return fw, nil
}

// stop closes fw's listener and the connections it carries.
func (f *Forwarder) stop(fw *forward) {
	fw.cancel()
	_ = fw.ln.Close()
	for addr, x := range f.fwds {
		if x == fw {
			delete(f.fwds, addr)
		}
	}
}

// maxConns bounds the connections one forward carries at once.
const maxConns = 256

// dialTimeout bounds one connection's opening in the guest.
const dialTimeout = 30 * time.Second

// serve accepts the host's connections and carries each to addr in the guest.
func (f *Forwarder) serve(ctx context.Context, fw *forward, addr string) {
	sem := make(chan struct{}, maxConns)
	for {
		c, err := fw.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(50 * time.Millisecond) // EMFILE and friends: never spin
			continue
		}
		select {
		case sem <- struct{}{}:
		default:
			_ = c.Close() // too many at once
			continue
		}
		go func() {
			defer func() { <-sem }()
			carry(ctx, c, f.opts.Dial, addr)
		}()
	}
}

// carry copies between the host's connection c and a new connection to addr in the guest,
// until either side ends (or the forward is stopped).
func carry(ctx context.Context, c net.Conn, dial DialFunc, addr string) {
	defer c.Close()
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	g, err := dial(dctx, addr)
	cancel()
	if err != nil {
		return
	}
	defer g.Close()
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(g, c)
		if cw, ok := g.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(c, g)
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	select {
	case <-done:
		<-done // the other direction ends when both sides close
	case <-ctx.Done():
	}
}

// saveLocked writes the record (its errors are logged: the forwards work without it).
func (f *Forwarder) saveLocked() {
	if f.opts.Record == nil {
		return
	}
	if err := f.opts.Record.Save(f.portsLocked()); err != nil {
		f.opts.Logger.Warn("cannot record the forwarded ports (limactl mcp ports will not show them)", "error", err)
	}
}
