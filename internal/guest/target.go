// Package guest is the one connection limactl-mcp keeps to a Lima instance: an SSH client
// (golang.org/x/crypto/ssh) carrying an SFTP session for file I/O and a channel to the guest
// runner for commands, reconnecting on the next call after the guest restarts.
package guest

import (
	"context"

	"golang.org/x/crypto/ssh"
)

// Target says how to reach the guest's sshd.
type Target struct {
	// Name is the instance name, for messages.
	Name string
	// Addr is host:port of the guest's sshd as forwarded to the host.
	Addr string
	// User is the guest user.
	User string
	// Signers authenticate the user.
	Signers []ssh.Signer
	// HostKeyCallback checks the guest's host key. Lima's own ssh config does not check it
	// (StrictHostKeyChecking=no): the port is a loopback forward to the instance itself.
	HostKeyCallback ssh.HostKeyCallback
	// Arch is the guest architecture ("x86_64", "aarch64"); empty means ask the guest.
	Arch string
	// ControlPath is the control socket of the instance's OpenSSH ControlMaster (Lima's
	// ssh.sock); empty when there is none. When a master answers on it, the connection rides
	// it (see Via); otherwise it makes its own.
	ControlPath string
}

// Resolver finds the target anew at every (re)connect: a restarted Lima instance may listen on
// another port. It returns an error that explains itself when the instance is not running.
type Resolver func(ctx context.Context) (*Target, error)
