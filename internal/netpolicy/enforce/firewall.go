package enforce

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// applyRules makes both families' chains hold the rules for users, and the jump to them first
// in OUTPUT. When IPv6 is off in the kernel (no /proc/net/if_inet6), nothing can leave over it
// and ip6tables is not needed. The families are done at once: each costs an iptables-save
// (300 ms in an emulated guest) even when nothing changes.
func applyRules(ctx context.Context, users []UserPolicy) error {
	v6 := make(chan error, 1)
	go func() {
		if _, err := os.Stat("/proc/net/if_inet6"); errors.Is(err, os.ErrNotExist) {
			v6 <- nil
			return
		}
		v6 <- applyFamily(ctx, ipv6, users)
	}()
	return errors.Join(applyFamily(ctx, ipv4, users), <-v6)
}

func applyFamily(ctx context.Context, fam family, users []UserPolicy) error {
	var paths [2]string
	for i, cmd := range []string{fam.save, fam.restore} {
		p, err := findTool(cmd)
		if err != nil {
			return fmt.Errorf("%s is not installed in the guest, so the network policy cannot be enforced for %s (install the iptables package)", cmd, fam.name)
		}
		paths[i] = p
	}
	current, err := runTool(ctx, nil, paths[0], "-t", "filter")
	if err != nil {
		return err
	}
	input := restoreInput(chainRules(fam, users), current)
	if input == "" {
		return nil
	}
	if _, err := runTool(ctx, strings.NewReader(input), paths[1], "--noflush", "--wait"); err != nil {
		return fmt.Errorf("%w\ninput was:\n%s", err, input)
	}
	return nil
}

// runTool runs a firewall command and returns its stdout; a failure says what it printed.
func runTool(ctx context.Context, stdin *strings.Reader, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
