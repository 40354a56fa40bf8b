// Package sshlink is the transport to a Lima instance's sshd: where the guest is (Target), the
// two ways to reach it, each a Transport (Direct: a connection of our own with
// golang.org/x/crypto/ssh; the instance's OpenSSH ControlMaster: ssh client processes riding
// it), and the one builder of an ssh command line through the master (Master.Args), as Lima's
// pkg/sshutil keeps its own. It knows nothing of the guest runner, of the agent user or of
// what the sessions carry: that is package guest (the façade) and guest/runnerclient.
package sshlink

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
