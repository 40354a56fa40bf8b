package instance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/lima-vm/lima/v2/pkg/limatype/filenames"
	"golang.org/x/crypto/ssh"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
)

// Resolver returns a sshlink.Resolver that looks the instance up anew at every (re)connect.
func Resolver(limactl, name string) sshlink.Resolver {
	return func(ctx context.Context) (*sshlink.Target, error) {
		inst, err := Inspect(ctx, limactl, name)
		if err != nil {
			return nil, err
		}
		if err := inst.CheckRunning(); err != nil {
			return nil, err
		}
		return TargetOf(inst)
	}
}

// ResolverFrom is Resolver, except that the first resolve uses inst (just looked up by the
// caller) instead of asking limactl again; every later one (a reconnect) asks anew.
func ResolverFrom(limactl, name string, inst *Instance) sshlink.Resolver {
	again := Resolver(limactl, name)
	var mu sync.Mutex
	first := inst
	return func(ctx context.Context) (*sshlink.Target, error) {
		mu.Lock()
		i := first
		first = nil
		mu.Unlock()
		if i == nil || i.CheckRunning() != nil {
			return again(ctx)
		}
		return TargetOf(i)
	}
}

// TargetOf says how to reach a running instance over ssh.
func TargetOf(inst *Instance) (*sshlink.Target, error) {
	keyPath, err := PrivateKeyPath()
	if err != nil {
		return nil, err
	}
	pem, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("cannot read Lima's ssh key: %w", err)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		return nil, fmt.Errorf("cannot parse Lima's ssh key %s: %w", keyPath, err)
	}
	t := &sshlink.Target{
		Name:    inst.Name,
		Addr:    inst.SSHAddr(),
		User:    inst.User(),
		Signers: []ssh.Signer{signer},
		Arch:    inst.Arch,
	}
	if inst.Dir != "" {
		// The ControlMaster that Lima's host agent keeps for the instance, in its directory.
		t.ControlPath = filepath.Join(inst.Dir, filenames.SSHSock)
	}
	return t, nil
}
