package configurecmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/instance"
)

func TestDockerTemplate(t *testing.T) {
	for _, c := range []struct {
		docker   bool
		template string
		want     string
	}{
		{false, instance.DefaultTemplate, instance.DefaultTemplate},
		{true, instance.DefaultTemplate, DockerTemplate},
		{true, "", DockerTemplate},
		{true, "template:ubuntu-24.04", "template:ubuntu-24.04"},
		{false, "template:ubuntu-24.04", "template:ubuntu-24.04"},
	} {
		if got := dockerTemplate(&Options{Docker: c.docker, Template: c.template}); got != c.want {
			t.Errorf("--docker=%v --template %q: %q, want %q", c.docker, c.template, got, c.want)
		}
	}
}

// fakeLimactl is a limactl whose `shell` prints out and exits with code.
func fakeLimactl(t *testing.T, out string, code int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "limactl")
	script := "#!/bin/sh\necho \"$@\" > " + p + ".args\nprintf '%s' '" + out + "'\nexit " + string(rune('0'+code)) + "\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckDocker(t *testing.T) {
	ctx := context.Background()
	ok := fakeLimactl(t, "", 0)
	if err := checkDocker(ctx, ok, "claude", "box"); err != nil {
		t.Fatalf("an instance with Docker: %v", err)
	}
	args, _ := os.ReadFile(ok + ".args")
	if !strings.HasPrefix(string(args), "shell --workdir / box -- sh -c ") {
		t.Errorf("limactl was run with %q", args)
	}

	err := checkDocker(ctx, fakeLimactl(t, "missing: slirp4netns\n", 3), "claude", "box")
	if err == nil {
		t.Fatal("an instance without slirp4netns passed")
	}
	for _, want := range []string{`instance "box" has no rootless Docker (slirp4netns is missing)`,
		"`limactl shell box sudo apt-get install -y docker.io rootlesskit slirp4netns uidmap`",
		"`limactl mcp configure claude --instance box-docker --create --docker`"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	// Guest text that is not one of the parts checked is not repeated.
	err = checkDocker(ctx, fakeLimactl(t, "missing: \x1b[2Jx\n", 3), "claude", "box")
	if err == nil || strings.Contains(err.Error(), "\x1b") || strings.Contains(err.Error(), "is missing") {
		t.Errorf("guest text in the error: %v", err)
	}
	// Another failure (the instance is not reachable) is said as such.
	if err := checkDocker(ctx, fakeLimactl(t, "", 1), "claude", "box"); err == nil || !strings.Contains(err.Error(), "checking instance \"box\" for rootless Docker") {
		t.Errorf("a failing limactl: %v", err)
	}
}
