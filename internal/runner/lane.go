package runner

import (
	"bufio"
	"errors"
	"net"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/keyauth"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// laneDialTimeout bounds the connection to the host and the handshake (runnerproto/lane.go).
const laneDialTimeout = 5 * time.Second

// attach opens the fast lane the host asks for (runnerproto.AttachRequest): it connects to the
// host's port, lets the host prove the key first and proves it in turn, then answers the
// requests that come on that connection as on the channel, until it ends. Asked on the fast
// lane itself, it is refused: the host asks on the channel.
func (s *server) attach(_ uint64, req *runnerproto.AttachRequest) (*runnerproto.AttachResult, error) {
	if s.lane {
		return nil, errors.New("the fast lane is opened from the runner's channel")
	}
	if len(req.Addr) > runnerproto.MaxLaneAddr {
		return nil, errors.New("the lane's address is too long")
	}
	if _, _, err := net.SplitHostPort(req.Addr); err != nil {
		return nil, err
	}
	key, err := keyauth.ParseKey(req.Key)
	if err != nil {
		return nil, err
	}
	c, err := net.DialTimeout("tcp", req.Addr, laneDialTimeout)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(laneDialTimeout))
	if err := keyauth.Prove(c, runnerproto.LaneHello, key, "runner"); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	lane := &server{state: s.state, out: bufio.NewWriter(c), lane: true}
	go func() {
		defer c.Close()
		_ = lane.serve(c)
	}()
	return &runnerproto.AttachResult{}, nil
}
