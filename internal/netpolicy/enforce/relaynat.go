package enforce

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/keyauth"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
)

// A relay's port on the host (netpolicy/relayauth.go): the proxy reaches the relay there
// through the VM's NAT, crossing no sshd, and falls back to the relay's socket when the port
// does not answer or does not prove itself. The ports and their keys are in a file of root's
// only, USER.relays beside the policy file (which every user can read), written by the set-up
// that brings them on its stdin.

// relayPort is one relay's port on the host and the key both ends prove they hold there.
type relayPort struct {
	Port int    `json:"port"`
	Key  string `json:"key"`
}

// maxRelayPortsFile bounds what the proxy reads of a relays file (maxRelays entries).
const maxRelayPortsFile = 16 << 10

// relayNATDialTimeout bounds the connection and the handshake on a relay's port: a port that
// does not answer in it sends the connection to the socket.
const relayNATDialTimeout = 2 * time.Second

// relayNATRetry is how long the proxy leaves a relay's port alone after it failed, going to
// the socket at once meanwhile (a guest whose NAT does not reach the host's loopback pays the
// timeout once in a while, not on every connection).
const relayNATRetry = time.Minute

func (l Layout) relayPortsFile(user string) string {
	return filepath.Join(l.ConfigDir, user+".relays")
}

// readRelayPorts reads user's relays file (nil when there is none or it does not check out:
// the sockets then carry everything).
func readRelayPorts(l Layout, user string) map[string]relayPort {
	data, err := readOwnFile(l.relayPortsFile(user), maxRelayPortsFile)
	if err != nil {
		return nil
	}
	var ports map[string]relayPort
	if json.Unmarshal(data, &ports) != nil {
		return nil
	}
	return ports
}

// writeRelayPorts writes user's relays file for relays (a set-up's, oldest first): the ports
// of the kept ones as the file had them, own's (the process setting up; nil: none) from its
// set-up. With no port left the file goes.
func writeRelayPorts(l Layout, user string, relays []RelayEntry, own *netpolicy.SecretsSetup) error {
	old := readRelayPorts(l, user)
	ports := map[string]relayPort{}
	for _, r := range relays {
		switch {
		case own != nil && r.Name == own.Relay:
			if own.RelayPort > 0 {
				ports[r.Name] = relayPort{Port: own.RelayPort, Key: own.RelayKey}
			}
		case old[r.Name].Port > 0:
			ports[r.Name] = old[r.Name]
		}
	}
	path := l.relayPortsFile(user)
	if len(ports) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", path, err)
		}
		return nil
	}
	data, _ := json.Marshal(ports)
	if _, err := writeFileIfChanged(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing the relays' ports of %s: %w", user, err)
	}
	return nil
}

// relayNATDown holds, by user, relay name and port, when a relay's port last failed.
var relayNATDown sync.Map

// dialRelayNAT connects to the port of user's relay named name, if it has one and it has not
// failed within relayNATRetry, and proves the line to it (the relay proved itself first).
// ok is false when the caller should use the socket instead.
func dialRelayNAT(l Layout, user, name, line string) (c net.Conn, ok bool) {
	if l.RelayHost == "" {
		return nil, false
	}
	rp, found := readRelayPorts(l, user)[name]
	if !found || rp.Port <= 0 || rp.Port > 65535 {
		return nil, false
	}
	key := user + "/" + name + ":" + strconv.Itoa(rp.Port)
	if at, found := relayNATDown.Load(key); found && time.Since(at.(time.Time)) < relayNATRetry {
		return nil, false
	}
	secret, err := keyauth.ParseKey(rp.Key)
	if err != nil {
		return nil, false
	}
	c, err = net.DialTimeout("tcp", net.JoinHostPort(l.RelayHost, strconv.Itoa(rp.Port)), relayNATDialTimeout)
	if err == nil {
		_ = c.SetDeadline(time.Now().Add(relayNATDialTimeout))
		if err = keyauth.Prove(c, netpolicy.RelayHello, secret, line); err == nil {
			_ = c.SetDeadline(time.Time{})
			relayNATDown.Delete(key)
			return c, true
		}
		c.Close()
	}
	relayNATDown.Store(key, time.Now())
	return nil, false
}
