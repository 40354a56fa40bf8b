package guest

import (
	"context"
	"fmt"
	"net"
	"time"

	"golang.org/x/crypto/ssh"
)

// sshClient makes a connection of our own to t's sshd (golang.org/x/crypto/ssh): the fallback
// when the instance's ControlMaster cannot be used. ctx bounds the dial and the handshake
// (15 s when it has no deadline).
func sshClient(ctx context.Context, t *Target) (*ssh.Client, error) {
	cfg := &ssh.ClientConfig{
		User:            t.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(t.Signers...)},
		HostKeyCallback: t.HostKeyCallback,
		Timeout:         15 * time.Second,
	}
	// ChaCha20-Poly1305 first: guests often run without AES instructions (an emulated CPU,
	// a baseline CPU model), where AES-GCM is several times slower for the guest's sshd.
	cfg.Ciphers = []string{"chacha20-poly1305@openssh.com", "aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "aes128-ctr", "aes256-ctr"}
	if cfg.HostKeyCallback == nil {
		cfg.HostKeyCallback = ssh.InsecureIgnoreHostKey() //nolint:gosec // see Target.HostKeyCallback
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", t.Addr)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the ssh server of instance %q at %s: %w", t.Name, t.Addr, err)
	}
	// The handshake takes no context: closing the connection ends it when ctx ends.
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	} else {
		_ = nc.SetDeadline(time.Now().Add(cfg.Timeout))
	}
	sc, chans, reqs, err := ssh.NewClientConn(nc, t.Addr, cfg)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("ssh handshake with instance %q at %s failed: %w", t.Name, t.Addr, err)
	}
	_ = nc.SetDeadline(time.Time{})
	return ssh.NewClient(sc, chans, reqs), nil
}
