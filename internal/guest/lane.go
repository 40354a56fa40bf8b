package guest

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerclient"
	"github.com/limactl-mcp/limactl-mcp/internal/keyauth"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// laneWait bounds the opening of a fast lane: the runner's connection and both proofs.
const laneWait = 10 * time.Second

// openLane opens r's fast lane (runnerproto/lane.go), in the background of the calls that
// start meanwhile (they go on the channel until it is up, and for good if it never is): a
// port on this host's loopback for this runner alone, a key given to the runner on its
// channel, and the runner connecting from the guest to host (Options.LaneHost) at that port.
// This side proves the key first, then takes the connection once the runner proved it too;
// the port is closed once it is taken, or after laneWait. Only for the Lima user's runner:
// under a network policy the runner is the agent's, whose connections the guest's firewall
// holds to the proxy.
func openLane(r *runnerclient.Client, host string, log *slog.Logger) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Debug("fast lane: no port on the host's loopback", "error", err)
		return
	}
	defer ln.Close()
	hexKey := keyauth.NewKey()
	key, _ := keyauth.ParseKey(hexKey)
	// Unbuffered, with stop: a connection proven after this function returned (the attach
	// failed, or came too late) is closed, not left behind.
	taken, stop := make(chan net.Conn), make(chan struct{})
	defer close(stop)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetDeadline(time.Now().Add(laneWait))
			line, err := keyauth.Accept(c, runnerproto.LaneHello, key)
			if err != nil || line != "runner" {
				c.Close() // anyone else on the host, or a runner that does not hold the key
				continue
			}
			_ = c.SetDeadline(time.Time{})
			select {
			case taken <- c:
			case <-stop:
				c.Close()
			}
			return
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), laneWait)
	defer cancel()
	port := ln.Addr().(*net.TCPAddr).Port
	if err := r.Attach(ctx, net.JoinHostPort(host, strconv.Itoa(port)), hexKey); err != nil {
		log.Debug("fast lane: the runner did not open it; its channel carries everything", "error", err)
		return
	}
	select {
	case c := <-taken:
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		r.UseLane(c)
		log.Debug("fast lane open", "port", port)
	case <-ctx.Done():
		log.Debug("fast lane: the runner said it opened it, but no proven connection came")
	}
}
