package configurecmd

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/instance"
)

// DockerTemplate is the template --create --docker makes the instance from: Lima's, with
// Docker's rootless packages (docs/docker.md).
const DockerTemplate = "template:docker"

// dockerCheckScript exits 0 when the guest has what a session's rootless Docker daemon needs
// (the same list as the guest's netpolicy/enforce dockerInstalled).
const dockerCheckScript = `for t in dockerd containerd rootlesskit slirp4netns newuidmap newgidmap; do command -v $t >/dev/null || PATH=$PATH:/usr/sbin:/sbin command -v $t >/dev/null || { echo "missing: $t"; exit 3; }; done`

// dockerParts are the names dockerCheckScript may say are missing.
var dockerParts = []string{"dockerd", "containerd", "rootlesskit", "slirp4netns", "newuidmap", "newgidmap"}

// dockerTemplate is the template --create uses: template:docker with --docker, unless
// --template names another (which must then bring rootless Docker itself).
func dockerTemplate(opts *Options) string {
	if opts.Docker && (opts.Template == "" || opts.Template == instance.DefaultTemplate) {
		return DockerTemplate
	}
	return opts.Template
}

// dockerFix is the command that adds rootless Docker to an existing Debian or Ubuntu instance
// (name is a Lima instance's: letters, digits, ".", "_" and "-", nothing to quote).
func dockerFix(name string) string {
	return "limactl shell " + name + " sudo apt-get install -y docker.io rootlesskit slirp4netns uidmap"
}

// checkDocker runs dockerCheckScript in the instance (it runs: checkSandbox made sure) and
// says what is missing and how to add it.
func checkDocker(ctx context.Context, limactl, agent, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, limactl, "shell", "--workdir", "/", name, "--", "sh", "-c", dockerCheckScript).CombinedOutput()
	if err == nil {
		return nil
	}
	missing := ""
	for _, line := range strings.Split(string(out), "\n") {
		// Guest text: only one of the names the script checks is repeated.
		if m, ok := strings.CutPrefix(strings.TrimSpace(line), "missing: "); ok && slices.Contains(dockerParts, m) {
			missing = " (" + m + " is missing)"
		}
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		return fmt.Errorf("checking instance %q for rootless Docker: %v", name, err)
	}
	return fmt.Errorf("instance %q has no rootless Docker%s, so its sessions get no Docker daemon: add it with `%s`, or make a new sandbox with `limactl mcp configure %s --instance %s-docker --create --docker`",
		name, missing, dockerFix(name), agent, name)
}
