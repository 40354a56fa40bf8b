//go:build !unix

package sshlink

import (
	"errors"
	"os/exec"
)

func setProcAttr(*exec.Cmd) {}

// ownSocket: OpenSSH multiplexing is a Unix affair (Lima does not use it on Windows either).
func ownSocket(string) error { return errors.New("ControlMaster is not used on this system") }
