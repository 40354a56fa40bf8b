package instance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// DefaultTemplate is the template a new sandbox instance is created from.
const DefaultTemplate = "template:default"

// SandboxOptions say what EnsureSandbox may do.
type SandboxOptions struct {
	// Create creates (and starts) the instance when it does not exist, and starts it when it
	// is stopped.
	Create bool
	// Template is the template of a new instance (default DefaultTemplate).
	Template string
	// Progress receives limactl's own output while it creates or starts the instance.
	Progress io.Writer
}

// CreateCommand is the command that creates a sandbox instance.
func CreateCommand(name, template string) string {
	if template == "" {
		template = DefaultTemplate
	}
	return fmt.Sprintf("limactl start --mount-none --name=%s %s", name, template)
}

// EnsureSandbox checks that the instance exists and runs without host mounts, creating or
// starting it when opts allow. It returns warnings (an instance with mounts) that do not stop
// the caller, and an error that says how to fix what does.
func EnsureSandbox(ctx context.Context, limactl, name string, opts SandboxOptions) (warnings []string, err error) {
	inst, err := Inspect(ctx, limactl, name)
	switch {
	case errors.Is(err, ErrNotExist):
		if !opts.Create {
			return nil, fmt.Errorf("instance %q does not exist: create it with `%s`, or pass --create", name, CreateCommand(name, opts.Template))
		}
		template := opts.Template
		if template == "" {
			template = DefaultTemplate
		}
		if err := runLimactl(ctx, limactl, opts.Progress, "start", "--mount-none", "--tty=false", "--name="+name, template); err != nil {
			return nil, fmt.Errorf("creating instance %q (%s): %w", name, CreateCommand(name, template), err)
		}
		return nil, nil
	case err != nil:
		return nil, err
	}
	if m := inst.Mounts(); len(m) > 0 {
		warnings = append(warnings, fmt.Sprintf("instance %q mounts host directories (%s): the agent's tools would work on your live files and nothing would be reviewable. For a sandbox, create an instance without mounts: `%s`, and use --instance %s-sandbox",
			name, strings.Join(m, ", "), CreateCommand(name+"-sandbox", opts.Template), name))
	}
	if err := inst.CheckRunning(); err != nil {
		if !opts.Create {
			warnings = append(warnings, err.Error())
			return warnings, nil
		}
		if err := runLimactl(ctx, limactl, opts.Progress, "start", "--tty=false", name); err != nil {
			return warnings, fmt.Errorf("starting instance %q: %w", name, err)
		}
	}
	return warnings, nil
}

// runLimactl runs limactl with its output (stdout too) sent to w: never to our stdout, which
// may carry MCP.
func runLimactl(ctx context.Context, limactl string, w io.Writer, args ...string) error {
	if w == nil {
		w = io.Discard
	}
	cmd := exec.CommandContext(ctx, limactl, args...)
	cmd.Stdout, cmd.Stderr = w, w
	return cmd.Run()
}
