package background

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// startServer starts a python http.server on a free loopback port with env added to the
// environment, through `sh -c` and setsid (a session and group of its own, as a shell's job
// or sudo's pty makes; sh, not a group leader, execs it: one pid to kill); it returns the port
// it serves on.
func startServer(t *testing.T, env ...string) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", "exec setsid python3 -u -m http.server 0 --bind 127.0.0.1")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	served := regexp.MustCompile(`port (\d+)`)
	got := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := served.FindStringSubmatch(sc.Text()); m != nil {
				p, _ := strconv.Atoi(m[1])
				got <- p
				return
			}
		}
		got <- 0
	}()
	select {
	case p := <-got:
		if p == 0 {
			t.Fatal("the server said no port")
		}
		return p
	case <-time.After(2 * time.Minute):
		t.Fatal("the server did not start")
	}
	return 0
}

func shellPortsOf(t *testing.T, mark string) []int {
	t.Helper()
	r, err := ShellPorts(&runnerproto.ShellPortsRequest{Mark: mark})
	if err != nil {
		t.Fatal(err)
	}
	var ports []int
	for _, p := range r.Ports {
		ports = append(ports, p.Port)
	}
	return ports
}

// The shell's previews: the sockets of the processes that carry the mark, in whatever group
// or session they are, and not those of a process with another mark or none.
func TestShellPortsOfTheMarkedProcesses(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 is needed (hack/e2e/setup.sh installs it)")
	}
	const mark = "0123456789abcdef0123456789abcdef"
	marked := startServer(t, runnerproto.ShellMarkVar+"="+mark)
	other := startServer(t, runnerproto.ShellMarkVar+"=fedcba9876543210fedcba9876543210")
	unmarked := startServer(t)
	// A prefix of the mark is another mark.
	prefixed := startServer(t, runnerproto.ShellMarkVar+"="+mark+"00")

	var got []int
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if got = shellPortsOf(t, mark); slices.Contains(got, marked) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !slices.Equal(got, []int{marked}) {
		t.Fatalf("ports %v, want only the marked server's %d (other mark %d, none %d, longer mark %d)", got, marked, other, unmarked, prefixed)
	}
	if got := shellPortsOf(t, "00000000000000000000000000000000"); len(got) != 0 {
		t.Errorf("a mark nobody carries: %v", got)
	}
	for _, bad := range []string{"", "short", "0123456789ABCDEF0123456789ABCDEF", mark + "\x00", mark + "=x"} {
		if _, err := ShellPorts(&runnerproto.ShellPortsRequest{Mark: bad}); err == nil {
			t.Errorf("mark %q accepted", bad)
		}
	}
}
