package tools

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/preview"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tools/env"
)

// Previews: the ports the server's background processes listen on in the guest, each
// forwarded to the host (internal/preview) while the process listens. The tools that see a
// process's status (its start, read_background_output, list_background_processes) bring the
// forwards up to date; between calls, a watcher lists the processes every few seconds while a
// forward exists, so that a URL goes away when its process stops listening or exits.

// PortStatus is one port a background process listens on.
type PortStatus struct {
	Port    int    `json:"port" jsonschema:"the TCP port it listens on in the guest"`
	HostURL string `json:"host_url,omitempty" jsonschema:"where the person reaches it from the host (give them this URL); a different port than the guest's when that one was taken on the host; absent when it could not be forwarded"`
}

// previews is a server's forwards and what it knows of its processes' ports.
type previews struct {
	fwd *preview.Forwarder

	mu        sync.Mutex
	listening map[int][]runnerproto.BgPort // by id: the running processes' ports
	forwards  map[int][]preview.Port
	watching  bool
	stop      chan struct{}
	e         *env.Env // the last call's environment, for the watcher
}

// watchInterval is how often the watcher lists the processes while a forward exists.
const watchInterval = 3 * time.Second

// WithPreviews forwards the ports of b's processes to the host through fwd (closed by End).
func (b *Background) WithPreviews(fwd *preview.Forwarder) *Background {
	b.pv = &previews{fwd: fwd, listening: map[int][]runnerproto.BgPort{}, forwards: map[int][]preview.Port{}, stop: make(chan struct{})}
	return b
}

// Previews returns the server's forwards (none without previews).
func (b *Background) Previews() []preview.Port {
	if b.pv == nil {
		return nil
	}
	return b.pv.fwd.Ports()
}

// seen records the statuses a call saw (all of the group's when all is true) and brings the
// forwards up to date; it returns the ports of each id for the agent.
func (b *Background) seen(e *env.Env, sts []runnerproto.BgStatus, all bool) map[int][]PortStatus {
	out := map[int][]PortStatus{}
	pv := b.pv
	if pv == nil {
		for _, s := range sts {
			for _, p := range s.Ports {
				out[s.ID] = appendPort(out[s.ID], PortStatus{Port: p.Port})
			}
		}
		return out
	}
	pv.mu.Lock()
	if all {
		pv.listening = map[int][]runnerproto.BgPort{}
	}
	for _, s := range sts {
		if len(s.Ports) > 0 && !s.Lost {
			pv.listening[s.ID] = s.Ports
		} else {
			delete(pv.listening, s.ID)
		}
	}
	pv.e = e
	pv.forwards = pv.fwd.Sync(pv.listening)
	start := len(pv.forwards) > 0 && !pv.watching
	if start {
		pv.watching = true
	}
	for _, s := range sts {
		fw := pv.forwards[s.ID]
		for _, p := range s.Ports {
			ps := PortStatus{Port: p.Port}
			for _, f := range fw {
				if f.GuestPort == p.Port {
					ps.HostURL = f.HostURL
				}
			}
			out[s.ID] = appendPort(out[s.ID], ps)
		}
	}
	pv.mu.Unlock()
	if start {
		go b.watch()
	}
	return out
}

// appendPort adds p unless its port is there (a socket on 0.0.0.0 and one on ::).
func appendPort(ps []PortStatus, p PortStatus) []PortStatus {
	for i, q := range ps {
		if q.Port == p.Port {
			if q.HostURL == "" {
				ps[i].HostURL = p.HostURL
			}
			return ps
		}
	}
	return append(ps, p)
}

// watch lists the processes every watchInterval while a forward exists.
func (b *Background) watch() {
	pv := b.pv
	t := time.NewTicker(watchInterval)
	defer t.Stop()
	for {
		select {
		case <-pv.stop:
			return
		case <-t.C:
		}
		pv.mu.Lock()
		e := pv.e
		pv.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		r, err := e.ListBackground(ctx, runnerproto.BgListRequest{Group: b.group(), Max: b.lim.MaxKept, Output: b.output()})
		cancel()
		if err != nil {
			continue // the connection is back at the next tick (or the server ends)
		}
		b.seen(e, r.Processes, !r.Truncated)
		pv.mu.Lock()
		if len(pv.forwards) == 0 {
			pv.watching = false
			pv.mu.Unlock()
			return
		}
		pv.mu.Unlock()
	}
}

// endPreviews closes the forwards and stops the watcher.
func (b *Background) endPreviews() {
	if b.pv == nil {
		return
	}
	b.pv.mu.Lock()
	select {
	case <-b.pv.stop:
	default:
		close(b.pv.stop)
	}
	b.pv.mu.Unlock()
	b.pv.fwd.Close()
}

// waitListening waits, up to lim.PortWait, for process id to listen (or end): the start's
// answer then carries its ports.
func (b *Background) waitListening(ctx context.Context, e *env.Env, id int) []PortStatus {
	deadline := time.Now().Add(b.lim.PortWait)
	for {
		r, err := e.ReadBackground(ctx, runnerproto.BgReadRequest{Group: b.group(), ID: id, Offset: 0, Max: 1, Output: b.output()})
		if err != nil || r.Unknown {
			return nil
		}
		if len(r.Status.Ports) > 0 || !r.Status.Running || !time.Now().Before(deadline) {
			return b.seen(e, []runnerproto.BgStatus{r.Status}, false)[id]
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// portsText says where the ports are reached, for a note.
func portsText(ps []PortStatus) string {
	var s string
	for i, p := range ps {
		if i > 0 {
			s += ", "
		}
		s += "port " + strconv.Itoa(p.Port)
		if p.HostURL != "" {
			s += " (from the host: " + p.HostURL + ")"
		}
	}
	return s
}
