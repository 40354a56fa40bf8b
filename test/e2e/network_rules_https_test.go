//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/secrets"
)

// Read-only HTTPS (issue 26): under `allow:@github-read` (github.com:ro,
// github.com/*/git-upload-pack:POST and the other GitHub hosts read-only) the session's relay
// on the host terminates github.com's TLS and checks each request. A real
// git in the guest, run by `limactl mcp shell`, clones and fetches from a git server on the
// host's loopback under github.com's name (git http-backend, TLS of a CA of its own, reached
// through the relay's test hook), and its push is refused before it reaches the server, which
// would have taken it (receive-pack on, as a POST straight from the host shows).
func TestNetworkReadOnlyHTTPS(t *testing.T) {
	srv := startGitServer(t)
	dir := homeWorkdir(t)
	mustT(t, os.WriteFile(filepath.Join(dir, "main.txt"), []byte("one\n"), 0o644))
	_ = os.Chown(filepath.Join(dir, "main.txt"), vmUID(t), vmGID(t))
	discardOnCleanup(t, dir)
	env := []string{secrets.TestUpstreamEnv + "=github.com:443=" + srv.addr, secrets.TestCAEnv + "=" + srv.caFile}

	// The server takes a push when the request reaches it.
	direct := exec.Command("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20",
		"--resolve", "github.com:"+srv.port+":127.0.0.1", "--cacert", srv.caFile,
		"-X", "POST", "-H", "Content-Type: application/x-git-receive-pack-request", "--data-binary", "0000",
		"https://github.com:"+srv.port+"/o/r.git/git-receive-pack")
	if out, err := direct.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "200" {
		t.Fatalf("the git server does not take a receive-pack POST from the host: %v %s", err, out)
	}
	srv.reset()
	before := srv.refs(t)

	script := `set -u
work=$(mktemp -d) && cd "$work"
git clone -q https://github.com/o/r.git 2>&1 && cat r/hello.txt && echo CLONE-OK
cd r
git fetch -q origin 2>&1 && echo FETCH-OK
echo more >> hello.txt && git -c user.email=agent@example.com -c user.name=agent commit -qam more
git push -q origin HEAD:main 2>&1; echo "PUSH-EXIT=$?"
curl -sS --max-time 30 -X POST -H 'Content-Type: application/x-git-receive-pack-request' --data-binary 0000 https://github.com/o/r.git/git-receive-pack; echo
curl -sS --max-time 30 -o /dev/null -w 'GET-REFS=%{http_code}\n' 'https://github.com/o/r.git/info/refs?service=git-upload-pack'`
	cmd := mcpShellCmd(t, dir, env, "--network=allow:@github-read", "--no-review", instanceName, "--", "sh", "-c", script)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := stdout.String()
	t.Logf("exit %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	for _, want := range []string{"hello from the host\nCLONE-OK", "FETCH-OK", "GET-REFS=200"} {
		if !strings.Contains(out, want) {
			t.Errorf("the agent's git did not get %q", want)
		}
	}
	if strings.Contains(out, "PUSH-EXIT=0") || !strings.Contains(out, "PUSH-EXIT=") {
		t.Errorf("the push was not refused")
	}
	if !strings.Contains(out, "no rule allows this method on this path") {
		t.Errorf("the refusal does not say why")
	}
	if strings.Contains(stderr.String(), `msg="secrets relay"`) {
		t.Errorf("a refusal by the rules was reported as the relay's failure")
	}
	if relay := regexp.MustCompile(`the relay on the host reads the HTTPS of [^\n]*\bgithub\.com:443`); !relay.MatchString(stderr.String()) {
		t.Errorf("the shell did not say that the relay reads github.com's HTTPS")
	}
	seen := srv.seen()
	t.Logf("the server got: %s", strings.Join(seen, ", "))
	var uploads int
	for _, r := range seen {
		if strings.Contains(r, "git-receive-pack") && strings.HasPrefix(r, "POST") {
			t.Errorf("a push reached the server: %s", r)
		}
		if r == "POST /o/r.git/git-upload-pack" {
			uploads++
		}
	}
	if uploads == 0 {
		t.Errorf("the fetch's POST never reached the server")
	}
	if after := srv.refs(t); after != before {
		t.Errorf("the server's refs changed:\n%s\n->\n%s", before, after)
	}
	st, _, code := plugin(t, dir, "status", instanceName, "--session", "default")
	if code != 0 || !strings.Contains(st, "requests:   github.com: ") || !strings.Contains(st, "HTTPS requests allowed by the network rules") || !strings.Contains(st, "refused (the last: POST /o/r.git/git-receive-pack)") {
		t.Errorf("status does not show the rules' requests:\n%s", st)
	}

	// watch lists the refused push as the rule that would allow exactly it, with the command
	// behind it (the guest's proxy names it to the relay: git's https helper, cloning
	// github.com/o/r.git).
	const rule = "github.com:443/o/r.git/git-receive-pack:POST"
	w := startWatchJSON(t, dir)
	var refusedBy string
	w.waitLine(t, func(line string) bool {
		var d struct {
			Method, Path, Via, Command string
			Held                       bool
		}
		ok := json.Unmarshal([]byte(line), &d) == nil && d.Method == "POST" && d.Path == "/o/r.git/git-receive-pack" && d.Via == "relay" && !d.Held
		refusedBy = d.Command
		return ok
	})
	if !strings.Contains(refusedBy, "github.com/o/r.git") {
		t.Errorf("the refused push names the command %q, want git's helper for github.com/o/r.git", refusedBy)
	}

	// While the watch runs, the relay holds the next push instead of refusing it; `network
	// once ID` (the watch's o) lets that one through, and the policy stays as it was.
	srv.reset()
	push := `set -u
work=$(mktemp -d) && cd "$work"
git clone -q https://github.com/o/r.git 2>&1 && cd r
echo ${WHAT:-allowed} >> hello.txt && git -c user.email=agent@example.com -c user.name=agent commit -qam allowed
git push -q origin HEAD:main 2>&1; echo "PUSH-EXIT=$?"`
	type shellResult struct {
		out, stderr string
		err         error
	}
	pushed := make(chan shellResult, 1)
	heldPush := mcpShellCmd(t, dir, env, "--no-review", instanceName, "--", "env", "WHAT=once", "sh", "-c", push)
	go func() {
		out, stderr, err := runCmd(heldPush)
		pushed <- shellResult{out, stderr, err}
	}()
	var held struct {
		ID, Method, Path, Via, Command string
		Held                           bool
		SecondsLeft                    int `json:"seconds_left"`
	}
	w.waitLine(t, func(line string) bool {
		return json.Unmarshal([]byte(line), &held) == nil && held.Held && held.Via == "relay" && held.Method == "POST" && held.Path == "/o/r.git/git-receive-pack"
	})
	if !strings.HasPrefix(held.ID, secrets.HeldIDPrefix) || held.SecondsLeft < 30 || !strings.Contains(held.Command, "github.com/o/r.git") {
		t.Errorf("the held push: %+v", held)
	}
	if slices.Contains(srv.seen(), "POST /o/r.git/git-receive-pack") {
		t.Errorf("the held push reached the server before the person decided")
	}
	onceOut, onceErr, code := plugin(t, dir, "network", instanceName, "once", held.ID)
	if code != 0 || !strings.Contains(onceOut, "request "+held.ID+" let through, that one only") {
		t.Errorf("network once %s: exit %d\n%s\n%s", held.ID, code, onceOut, onceErr)
	}
	var res shellResult
	select {
	case res = <-pushed:
	case <-time.After(4 * time.Minute):
		t.Fatal("the held push never ended")
	}
	t.Logf("the push held and let through once: %v\nstdout:\n%s\nstderr:\n%s", res.err, res.out, res.stderr)
	if !strings.Contains(res.out, "PUSH-EXIT=0") || !slices.Contains(srv.seen(), "POST /o/r.git/git-receive-pack") || !strings.Contains(srv.file(t, "hello.txt"), "once") {
		t.Errorf("the push let through once did not reach the server (it got: %s)", strings.Join(srv.seen(), ", "))
	}
	w.stop()
	if st, _, _ := plugin(t, dir, "network", instanceName, "show"); strings.Contains(st, "git-receive-pack") {
		t.Errorf("once changed the policy:\n%s", st)
	}

	// Allowed (what the watch's a key does: `network allow RULE`), the next push goes through,
	// without a restart and without a watch.
	if out, stderr, code := plugin(t, dir, "network", instanceName, "allow", rule); code != 0 {
		t.Fatalf("network allow %s: exit %d\n%s\n%s", rule, code, out, stderr)
	}
	srv.reset()
	out2, stderr2, code2 := mcpShell(t, dir, env, "--no-review", instanceName, "--", "sh", "-c", push)
	t.Logf("after allowing %s: exit %d\nstdout:\n%s\nstderr:\n%s", rule, code2, out2, stderr2)
	if !strings.Contains(out2, "PUSH-EXIT=0") {
		t.Errorf("the push allowed from watch's rule did not go through")
	}
	if !slices.Contains(srv.seen(), "POST /o/r.git/git-receive-pack") || !strings.Contains(srv.file(t, "hello.txt"), "allowed") {
		t.Errorf("the allowed push did not reach the server (it got: %s)", strings.Join(srv.seen(), ", "))
	}
}

// watchFor runs `limactl mcp watch --json` in dir until a line it prints satisfies match
// (bounded: two minutes), and returns what it printed.
func watchFor(t *testing.T, dir string, match func(line string) bool) string {
	t.Helper()
	w := startWatchJSON(t, dir)
	w.waitLine(t, match)
	w.stop()
	return w.stdout.String()
}

// watchStream is `limactl mcp watch --json` running in a directory (at most ten minutes),
// its lines kept as it prints them.
type watchStream struct {
	cancel         context.CancelFunc
	stdout, stderr lockedBuffer
	mu             sync.Mutex
	lines          []string
	more           chan struct{} // closed and replaced at each line
	exited         chan error
}

func startWatchJSON(t *testing.T, dir string) *watchStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	w := &watchStream{cancel: cancel, more: make(chan struct{}), exited: make(chan error, 1)}
	cmd := vm.Command(ctx, "limactl-mcp", "watch", instanceName, "--json")
	cmd.Dir = dir
	cmd.Stdout = io.MultiWriter(&w.stdout, &lineFunc{f: func(line string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.lines = append(w.lines, line)
		close(w.more)
		w.more = make(chan struct{})
	}})
	cmd.Stderr = &w.stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() { w.exited <- cmd.Wait() }()
	t.Cleanup(w.stop)
	return w
}

// waitLine waits (two minutes at most) until a line printed since the last line waitLine
// returned satisfies match; the lines before it are passed over.
func (w *watchStream) waitLine(t *testing.T, match func(line string) bool) string {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for next := 0; ; {
		w.mu.Lock()
		lines, more := w.lines, w.more
		w.mu.Unlock()
		for ; next < len(lines); next++ {
			if match(lines[next]) {
				w.mu.Lock()
				w.lines = w.lines[next+1:]
				w.mu.Unlock()
				return lines[next]
			}
		}
		select {
		case <-more:
		case err := <-w.exited:
			w.exited <- err
			t.Fatalf("watch --json ended (%v) without the line looked for:\n%s\nstderr:\n%s", err, w.stdout.String(), w.stderr.String())
		case <-deadline:
			t.Fatalf("watch --json printed no such line in two minutes:\n%s\nstderr:\n%s", w.stdout.String(), w.stderr.String())
		}
	}
}

// stop ends the watch and waits for it.
func (w *watchStream) stop() {
	w.cancel()
	err := <-w.exited
	w.exited <- err
}

// gitServer is git's smart HTTP (git http-backend) over TLS on the host's loopback, with a
// certificate for github.com of a CA of its own, serving the bare repository o/r.git.
type gitServer struct {
	addr, port, caFile, root string
	mu                       sync.Mutex
	got                      []string
}

func startGitServer(t *testing.T) *gitServer {
	t.Helper()
	backend := "/usr/lib/git-core/git-http-backend"
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("the host has no %s (install git): %v", backend, err)
	}
	root := t.TempDir()
	bare := filepath.Join(root, "o", "r.git")
	work := filepath.Join(root, "work")
	run := func(dir string, args ...string) {
		t.Helper()
		c := exec.Command("git", args...)
		c.Dir = dir
		c.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	mustT(t, os.MkdirAll(bare, 0o755))
	run(bare, "init", "-q", "--bare", "-b", "main")
	run(bare, "config", "http.receivepack", "true")
	run(root, "init", "-q", "-b", "main", work)
	mustT(t, os.WriteFile(filepath.Join(work, "hello.txt"), []byte("hello from the host\n"), 0o644))
	run(work, "add", "hello.txt")
	run(work, "-c", "user.email=host@example.com", "-c", "user.name=host", "commit", "-qm", "one")
	run(work, "push", "-q", bare, "main")

	caDir := t.TempDir()
	ca, err := secrets.OpenCA(caDir, []string{"github.com"})
	mustT(t, err)
	leaf, err := ca.Leaf("github.com")
	mustT(t, err)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{*leaf}})
	mustT(t, err)
	s := &gitServer{addr: ln.Addr().String(), root: root}
	_, s.port, _ = strings.Cut(s.addr, ":")
	cgiH := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1"}}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.got = append(s.got, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		cgiH.ServeHTTP(w, r)
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	s.caFile = writeHookCA(t, ca.CertPEM())
	return s
}

func (s *gitServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

func (s *gitServer) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = nil
}

// refs are the bare repository's refs, as git lists them.
func (s *gitServer) refs(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", filepath.Join(s.root, "o", "r.git"), "for-each-ref").CombinedOutput()
	if err != nil {
		t.Fatalf("git for-each-ref: %v %s", err, out)
	}
	return fmt.Sprint(string(out))
}

// file is name as the bare repository's main branch holds it.
func (s *gitServer) file(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", filepath.Join(s.root, "o", "r.git"), "show", "main:"+name).CombinedOutput()
	if err != nil {
		t.Fatalf("git show main:%s: %v %s", name, err, out)
	}
	return string(out)
}
