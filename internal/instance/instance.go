// Package instance finds a Lima instance the way a limactl plugin should: through
// `limactl list --json NAME` (reading Lima's store directly would need its VM drivers).
package instance

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/lima-vm/lima/v2/pkg/limatype"
	"github.com/lima-vm/lima/v2/pkg/limatype/dirnames"
	"github.com/lima-vm/lima/v2/pkg/limatype/filenames"
)

// DefaultName is the instance used when none is named, as in Lima.
const DefaultName = "default"

// Instance is what limactl-mcp needs to know of a Lima instance.
type Instance struct {
	Name         string             `json:"name"`
	Status       limatype.Status    `json:"status"`
	Dir          string             `json:"dir"`
	Arch         string             `json:"arch"`
	SSHLocalPort int                `json:"sshLocalPort,omitempty"`
	SSHAddress   string             `json:"sshAddress,omitempty"`
	Message      string             `json:"message,omitempty"`
	Config       *limatype.LimaYAML `json:"config,omitempty"`
}

// User is the guest user name.
func (i *Instance) User() string {
	if i.Config != nil && i.Config.User.Name != nil && *i.Config.User.Name != "" {
		return *i.Config.User.Name
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "lima"
}

// Mounts lists the host directories mounted into the guest.
func (i *Instance) Mounts() []string {
	if i.Config == nil {
		return nil
	}
	var m []string
	for _, mt := range i.Config.Mounts {
		m = append(m, mt.Location)
	}
	return m
}

// ErrNotExist is wrapped by the error for an instance that does not exist.
var ErrNotExist = errors.New("no such Lima instance")

// ErrNotRunning is wrapped by the error for an instance that is not running.
var ErrNotRunning = errors.New("the Lima instance is not running")

// Limactl finds limactl: $LIMACTL, then PATH (when limactl runs a plugin, PATH starts with
// limactl's own directory).
func Limactl() (string, error) {
	name := cmp.Or(os.Getenv("LIMACTL"), "limactl")
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("cannot find limactl (looked for %q on PATH; set LIMACTL to its path): %w", name, err)
	}
	return p, nil
}

// Inspect returns the instance called name.
func Inspect(ctx context.Context, limactl, name string) (*Instance, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, limactl, "list", "--json", name)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	msg := strings.TrimSpace(stderr.String())
	if strings.Contains(msg, "No instance matching") || (runErr == nil && strings.TrimSpace(stdout.String()) == "") {
		names, _ := namesWith(ctx, limactl)
		return nil, notExist(name, names)
	}
	if runErr != nil {
		return nil, fmt.Errorf("`limactl list --json %s` failed: %w: %s", name, runErr, msg)
	}
	// One JSON object per line; the first is the instance asked for.
	line, _, _ := bytes.Cut(bytes.TrimSpace(stdout.Bytes()), []byte("\n"))
	var inst Instance
	if err := json.Unmarshal(line, &inst); err != nil {
		return nil, fmt.Errorf("cannot parse `limactl list --json %s`: %w", name, err)
	}
	if inst.Name != name {
		names, _ := namesWith(ctx, limactl)
		return nil, notExist(name, names)
	}
	return &inst, nil
}

// CheckRunning explains an instance that is not running.
func (i *Instance) CheckRunning() error {
	switch i.Status {
	case limatype.StatusRunning:
		if i.SSHLocalPort == 0 {
			return fmt.Errorf("instance %q is running but has no ssh port yet; wait for `limactl start %s` to finish", i.Name, i.Name)
		}
		return nil
	case limatype.StatusStopped:
		return fmt.Errorf("%w: instance %q is stopped; start it with `limactl start %s`", ErrNotRunning, i.Name, i.Name)
	case limatype.StatusBroken:
		why := i.Message
		if why == "" {
			why = "see `limactl list " + i.Name + "`"
		}
		return fmt.Errorf("%w: instance %q is broken: %s", ErrNotRunning, i.Name, why)
	default:
		return fmt.Errorf("%w: instance %q is %s; start it with `limactl start %s`", ErrNotRunning, i.Name, cmp.Or(string(i.Status), "in an unknown state"), i.Name)
	}
}

// PrivateKeyPath is Lima's own ssh key for its instances: $LIMA_HOME/_config/user.
func PrivateKeyPath() (string, error) {
	dir, err := dirnames.LimaConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filenames.UserPrivateKey), nil
}

// SSHAddr is host:port of the instance's ssh port forward.
func (i *Instance) SSHAddr() string {
	host := cmp.Or(i.SSHAddress, "127.0.0.1")
	return fmt.Sprintf("%s:%d", host, i.SSHLocalPort)
}

// Names lists the instances (`limactl list --format {{.Name}}`).
func Names(ctx context.Context) ([]string, error) {
	limactl, err := Limactl()
	if err != nil {
		return nil, err
	}
	return namesWith(ctx, limactl)
}

func namesWith(ctx context.Context, limactl string) ([]string, error) {
	out, err := exec.CommandContext(ctx, limactl, "list", "--format", "{{.Name}}").Output()
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// List is every instance (`limactl list --json`).
func List(ctx context.Context, limactl string) ([]Instance, error) {
	out, err := exec.CommandContext(ctx, limactl, "list", "--json").Output()
	if err != nil {
		return nil, fmt.Errorf("`limactl list --json` failed: %w", err)
	}
	var all []Instance
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var inst Instance
		if err := json.Unmarshal(line, &inst); err != nil {
			return nil, fmt.Errorf("cannot parse `limactl list --json`: %w", err)
		}
		all = append(all, inst)
	}
	return all, nil
}
