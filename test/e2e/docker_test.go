//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// probeSource is the one program of the test's container image: "write PATH TEXT" writes a
// file (through the bind mount of the staged copy), "dial ADDR..." tries a TCP connection to
// each address and prints "ADDR ok" or "ADDR refused: ...", "sleep" sleeps an hour.
const probeSource = `package main

import (
	"fmt"
	"net"
	"os"
	"time"
)

func main() {
	switch os.Args[1] {
	case "write":
		if err := os.WriteFile(os.Args[2], []byte(os.Args[3]+"\n"), 0o644); err != nil {
			fmt.Println("write:", err)
			os.Exit(1)
		}
	case "sleep":
		time.Sleep(time.Hour)
	case "dial":
		for _, a := range os.Args[2:] {
			c, err := net.DialTimeout("tcp", a, 15*time.Second)
			if err != nil {
				fmt.Printf("%s refused: %v\n", a, err)
				continue
			}
			c.Close()
			fmt.Printf("%s ok\n", a)
		}
	}
}
`

// probeImage builds the probe for the guest's architecture and writes `docker load`'s tarball
// of an image with nothing but it (what `docker save` writes: manifest.json, the config, one
// layer), tagged lmcp-probe:1. No registry is needed.
func probeImage(t *testing.T, out string) {
	t.Helper()
	arch := strings.TrimSpace(guestShell(t, "uname -m"))
	goarch := map[string]string{"x86_64": "amd64", "aarch64": "arm64"}[arch]
	src := t.TempDir()
	mustT(t, os.WriteFile(filepath.Join(src, "main.go"), []byte(probeSource), 0o644))
	mustT(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module probe\n\ngo 1.21\n"), 0o644))
	bin := filepath.Join(src, "probe")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off")
	if o, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the probe: %v\n%s", err, o)
	}
	exe, err := os.ReadFile(bin)
	mustT(t, err)

	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	mustT(t, lw.WriteHeader(&tar.Header{Name: "probe", Mode: 0o755, Size: int64(len(exe)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}))
	_, err = lw.Write(exe)
	mustT(t, err)
	mustT(t, lw.Close())
	diff := sha256.Sum256(layer.Bytes())
	config, _ := json.Marshal(map[string]any{
		"architecture": goarch, "os": "linux",
		"config": map[string]any{"Entrypoint": []string{"/probe"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(diff[:])}},
	})
	configSum := sha256.Sum256(config)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	layerName := hex.EncodeToString(diff[:]) + "/layer.tar"
	manifest, _ := json.Marshal([]map[string]any{{"Config": configName, "RepoTags": []string{"lmcp-probe:1"}, "Layers": []string{layerName}}})

	f, err := os.Create(out)
	mustT(t, err)
	tw := tar.NewWriter(f)
	for _, e := range []struct {
		name string
		data []byte
	}{{configName, config}, {layerName, layer.Bytes()}, {"manifest.json", manifest}} {
		if dir := filepath.Dir(e.name); dir != "." {
			mustT(t, tw.WriteHeader(&tar.Header{Name: dir + "/", Mode: 0o755, Typeflag: tar.TypeDir, ModTime: time.Unix(0, 0)}))
		}
		mustT(t, tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}))
		_, err := tw.Write(e.data)
		mustT(t, err)
	}
	mustT(t, tw.Close())
	mustT(t, f.Close())
}

// dockerShell is mcpShell with 15 minutes instead of 5: on an emulated guest the daemon takes
// over a minute to start and a container run as long (measured on a loaded host).
func dockerShell(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := vm.Command(ctxT(t, 15*time.Minute), "limactl", append([]string{"mcp", "shell"}, args...)...)
	cmd.Dir = dir
	stdout, stderr, err := runCmd(cmd)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("limactl mcp shell %v: %v", args, err)
	}
	return stdout, stderr, code
}

// waitDocker is a script line: wait (up to 4 min on an emulated guest) for the session's
// daemon, which starts with the session, then say how long it took.
const waitDocker = `t0=$(date +%s); for i in $(seq 240); do docker info >/dev/null 2>&1 && break; sleep 1; done; docker info >/dev/null || { echo "no daemon: DOCKER_HOST=$DOCKER_HOST"; exit 1; }; echo "daemon-ready-after $(( $(date +%s) - t0 )) s"
`

// A session under --network=none gets a Docker daemon of its own (a rootless dockerd as the
// agent user): a container built from a loaded tarball writes into the staged copy through a
// bind mount and review applies it; the container reaches the guest's loopback (slirp4netns,
// 10.0.2.2) but neither the host's loopback server nor the Debian mirror, which the guest itself
// reaches; another session's daemon does not see the image; discard stops the daemon and its
// containers.
func TestDockerSession(t *testing.T) {
	if out, code := guestRun(t, "test -x /usr/share/docker.io/contrib/dockerd-rootless.sh && command -v rootlesskit slirp4netns newuidmap"); code != 0 {
		t.Fatalf("the e2e image has no rootless Docker (rebuild the kit: hack/e2e/build-image.sh fast): %s", out)
	}
	port := netHTTPServer(t)
	hostIP := strings.Fields(guestShell(t, "getent ahostsv4 host.lima.internal | head -1"))[0]
	mirrorIP := strings.Fields(guestShell(t, "getent ahostsv4 deb.debian.org | head -1"))[0]
	hostAddr := fmt.Sprintf("%s:%d", hostIP, port)
	mirrorAddr := mirrorIP + ":80"
	// Controls: the guest itself (the Lima user, no policy) reaches both.
	if out, code := guestRun(t, fmt.Sprintf("curl -sS -m 30 -o /dev/null http://%s/ && curl -sS -m 30 -o /dev/null http://%s/debian/", hostAddr, mirrorAddr)); code != 0 {
		t.Fatalf("control: the guest itself cannot reach the host's server or the mirror: %s", out)
	}

	dir := project(t, map[string]string{"a.txt": "a\n"})
	probeImage(t, filepath.Join(dir, "probe.tar"))
	chownToUser(t, dir)
	discardOnCleanup(t, dir)

	script := waitDocker + loopbackServer(18941) + fmt.Sprintf(`set -e
docker load -i probe.tar
s=$(date +%%s%%N); docker run --rm -v "$PWD:/work" lmcp-probe:1 write /work/from-container.txt made-in-a-container; e=$(date +%%s%%N)
echo "first-run-ms $(( (e-s)/1000000 ))"
s=$(date +%%s%%N); docker run --rm lmcp-probe:1 dial 10.0.2.2:18941 %s %s; e=$(date +%%s%%N)
echo "second-run-ms $(( (e-s)/1000000 ))"
kill $pid
docker run -d --user 1000 --name lmcp-sleeper lmcp-probe:1 sleep >/dev/null
`, hostAddr, mirrorAddr)
	stdout, stderr, code := dockerShell(t, dir, "--network=none", "--no-review", instanceName, "--", "bash", "-c", script)
	t.Logf("session's output:\n%s", stdout)
	if code != 0 {
		t.Fatalf("the session's docker script: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "10.0.2.2:18941 ok") {
		t.Errorf("the container did not reach the guest's loopback (slirp4netns): the refusals below prove nothing\n%s", stdout)
	}
	for _, a := range []string{hostAddr, mirrorAddr} {
		if !strings.Contains(stdout, a+" refused") {
			t.Errorf("under none, a container reached %s:\n%s", a, stdout)
		}
	}

	// status lists the running container; it runs as a subordinate uid of the agent (--user
	// 1000), which discard must end too.
	if out, stderr, code := plugin(t, dir, "status", instanceName); code != 0 || !strings.Contains(out, "containers: 1 running") || !strings.Contains(out, "lmcp-sleeper  lmcp-probe:1  Up") {
		t.Errorf("status: exit %d\n%s\n%s", code, out, stderr)
	}
	if out := guestShell(t, `ps -eo uid=,args= | awk '$1 >= 100000 && $1 < 4294967294' || true`); !strings.Contains(out, "/probe sleep") {
		t.Errorf("the sleeper is not running as a subordinate uid:\n%s", out)
	}

	// Another session of the same project: a daemon of its own, which has not seen the image.
	out2, stderr2, code := dockerShell(t, dir, "--session", "other", "--network=none", "--no-review", instanceName, "--",
		"bash", "-c", waitDocker+`echo "images:$(docker images -q lmcp-probe:1)"; echo "containers:$(docker ps -aq)"; echo "host:$DOCKER_HOST"`)
	if code != 0 || !strings.Contains(out2, "images:\n") || !strings.Contains(out2, "containers:\n") {
		t.Errorf("the other session's daemon: exit %d\n%s\n%s", code, out2, stderr2)
	}

	// Review applies what the container wrote.
	out, rstderr, code := plugin(t, dir, "review", instanceName, "--yes")
	if code != 0 {
		t.Fatalf("review: exit %d\n%s\n%s", code, out, rstderr)
	}
	got, err := os.ReadFile(filepath.Join(dir, "from-container.txt"))
	if err != nil || string(got) != "made-in-a-container\n" {
		t.Errorf("from-container.txt after review: %q %v", got, err)
	}

	// Discard stops the daemon and every container: no process of the agents' subordinate
	// uids is left, and the units are inactive.
	units := strings.Fields(guestShell(t, "systemctl list-units --all --plain --no-legend 'limactl-mcp-docker@*' | awk '$3 == \"active\" {print $1}'"))
	if len(units) < 2 {
		t.Errorf("want the two sessions' daemons running, got %v", units)
	}
	for _, session := range [][]string{nil, {"--session", "other"}} {
		cmd := vm.Command(ctxT(t, 2*time.Minute), ourBin, append([]string{"discard", instanceName, "--yes"}, session...)...)
		cmd.Dir = dir
		if o, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("discard %v: %v\n%s", session, err, o)
		}
	}
	for _, u := range units {
		if state := strings.TrimSpace(guestShell(t, "systemctl is-active "+u+" || true")); state == "active" {
			t.Errorf("%s is still active after discard", u)
		}
	}
	if left := guestShell(t, `ps -eo uid=,comm= | awk '$1 >= 100000 && $1 < 4294967294' || true`); strings.TrimSpace(left) != "" {
		t.Errorf("processes of subordinate uids left after discard:\n%s", left)
	}
}
