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

// dialRelay connects to the newest of user's relays that takes target (relays.go) and
// answers, at its port on the host when it has one that answers and proves itself
// (relaynat.go), else at its socket, and tells it what the connection is for, line: a bound host:port, or a rule target
// and its rules (rule). The relay checks the target against its own bound hosts and rule
// targets again.
func dialRelay(l Layout, user UserPolicy, target string, rule bool, line string) (net.Conn, error) {
	names := user.relaysFor(target, rule)
	if len(names) == 0 {
		return nil, fmt.Errorf("no relay of the session takes %s", target)
	}
	var errs []error
	for _, name := range names {
		if c, ok := dialRelayNAT(l, user.User, name, line); ok {
			return c, nil // through the VM's NAT to the relay's port (relaynat.go)
		}
		c, err := connectRelay(l, user.User, user.RelayUID, name)
		if errors.Is(err, errNoRelay) {
			errs = append(errs, err)
			continue // its process ended: an older one may still be there
		}
		if err != nil {
			return nil, err
		}
		_ = c.SetWriteDeadline(time.Now().Add(dialTimeout))
		if _, err := c.Write([]byte(line + "\n")); err != nil {
			c.Close()
			return nil, fmt.Errorf("writing to the relay: %w", err)
		}
		_ = c.SetWriteDeadline(time.Time{})
		return c, nil
	}
	return nil, errors.Join(errs...)
}

// errNoRelay: nothing listens at a relay's socket.
var errNoRelay = errors.New("no relay listening (is the limactl mcp process that holds the secrets running?)")

// connectRelay connects to the socket of user's relay named name. The directory is opened with
// no symbolic link followed at any component (openDirNoFollow) and must be relayUID's and
// 0700; the socket is reached through that descriptor (/proc/self/fd/N/NAME: there is no
// connectat); the listener must be relayUID (SO_PEERCRED: sshd's session, as the Lima user,
// listens there for the host).
func connectRelay(l Layout, user string, relayUID int, name string) (net.Conn, error) {
	if err := netpolicy.CheckRelayName(name); err != nil {
		return nil, err
	}
	dir := l.secretsDir(user)
	fd, err := openDirNoFollow(dir)
	if err != nil {
		return nil, fmt.Errorf("the relay directory: %w", err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("the relay directory: %w", err)
	}
	if int(st.Uid) != relayUID || st.Mode&0o777 != 0o700 {
		return nil, fmt.Errorf("%s is not the Lima user's (uid %d) with mode 0700", dir, relayUID)
	}
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.Dial("unix", "/proc/self/fd/"+strconv.Itoa(fd)+"/"+netpolicy.RelaySocketName(name))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoRelay, err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errors.New("not a unix socket")
	}
	uid, err := peerCredUID(uc)
	if err != nil || uid != relayUID {
		c.Close()
		return nil, fmt.Errorf("the relay socket is not held by the Lima user (uid %d): refused", relayUID)
	}
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
