package enforce

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// dialRelay connects to user's relay socket and tells the relay what the connection is for,
// line: a bound host:port, or a rule target and its rules (ruleTarget). The directory is opened with no symbolic link followed at any
// component (openDirNoFollow) and must be the relay user's and 0700; the socket is reached
// through that descriptor (/proc/self/fd/N/relay.sock: there is no connectat); the listener
// must be the relay user (SO_PEERCRED: sshd's session, as the Lima user, listens there for the
// host). The relay checks the target against its own bound hosts and rule targets again.
func dialRelay(l Layout, user UserPolicy, line string) (net.Conn, error) {
	dir := l.secretsDir(user.User)
	fd, err := openDirNoFollow(dir)
	if err != nil {
		return nil, fmt.Errorf("the relay directory: %w", err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("the relay directory: %w", err)
	}
	if int(st.Uid) != user.RelayUID || st.Mode&0o777 != 0o700 {
		return nil, fmt.Errorf("%s is not the Lima user's (uid %d) with mode 0700", dir, user.RelayUID)
	}
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.Dial("unix", "/proc/self/fd/"+strconv.Itoa(fd)+"/"+netpolicy.RelaySocketName)
	if err != nil {
		return nil, fmt.Errorf("no relay listening (is the limactl mcp process that holds the secrets running?): %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errors.New("not a unix socket")
	}
	uid, err := peerCredUID(uc)
	if err != nil || uid != user.RelayUID {
		c.Close()
		return nil, fmt.Errorf("the relay socket is not held by the Lima user (uid %d): refused", user.RelayUID)
	}
	_ = c.SetWriteDeadline(time.Now().Add(dialTimeout))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		c.Close()
		return nil, fmt.Errorf("writing to the relay: %w", err)
	}
	_ = c.SetWriteDeadline(time.Time{})
	return c, nil
}

// peerCredUID is the uid of the process that made the other end of c (the listener).
func peerCredUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	uid := -1
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil {
			cerr = err
			return
		}
		uid = int(cred.Uid)
	}); err != nil {
		return -1, err
	}
	return uid, cerr
}
