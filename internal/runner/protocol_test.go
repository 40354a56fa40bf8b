package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// Each operation of the protocol, answered by every runner (see runners_test.go).

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// execIn runs argv in dir, keeping up to 1 MiB of each stream.
func execIn(t *testing.T, r *testRunner, dir string, argv ...string) *runnerproto.ExecResult {
	t.Helper()
	return r.exec(t, &runnerproto.ExecRequest{Argv: argv, Dir: dir, TimeoutMillis: time.Minute.Milliseconds(), HeadBytes: 1 << 20, TailBytes: 1 << 20})
}

func streams(r *runnerproto.ExecResult) (stdout, stderr string) {
	return string(r.Stdout.Head) + string(r.Stdout.Tail), string(r.Stderr.Head) + string(r.Stderr.Tail)
}

func TestProtocolExec(t *testing.T) {
	forEachRunner(t, func(t *testing.T, r *testRunner) {
		dir := t.TempDir()
		res := execIn(t, r, "/", "sh", "-c", "echo out; echo err >&2; exit 13")
		if out, errs := streams(res); out != "out\n" || errs != "err\n" || res.ExitCode != 13 || res.Signal != "" || res.StartError != "" {
			t.Errorf("exit 13: %+v", res)
		}
		res = execIn(t, r, dir, "pwd")
		if out, _ := streams(res); out != dir+"\n" || res.ExitCode != 0 {
			t.Errorf("pwd in %s: %+v", dir, res)
		}
		// Leading NAME=value words set the environment, as in `limactl shell`.
		res = execIn(t, r, "/", "GREETING=a b", "sh", "-c", `printf '%s|%s' "$GREETING" "$PWD"`)
		if out, _ := streams(res); out != "a b|/" {
			t.Errorf("environment: %q", out)
		}
		// Output is bytes, not text.
		res = execIn(t, r, "/", "printf", `\377\000\342\202`)
		if out, _ := streams(res); out != "\xff\x00\xe2\x82" {
			t.Errorf("bytes: %q", out)
		}
		// What lies between head and tail is counted, not sent.
		res = r.exec(t, &runnerproto.ExecRequest{Argv: []string{"printf", "0123456789abcdef"}, Dir: "/", HeadBytes: 4, TailBytes: 3})
		if string(res.Stdout.Head) != "0123" || string(res.Stdout.Tail) != "def" || res.Stdout.Total != 16 {
			t.Errorf("head and tail: %+v", res.Stdout)
		}
		// Killed by a signal.
		res = execIn(t, r, "/", "sh", "-c", "kill -TERM $$")
		if res.ExitCode != -1 || res.Signal != "SIGTERM" {
			t.Errorf("killed by SIGTERM: %+v", res)
		}
		// A missing directory, a missing program (which the shell explains, as it would).
		res = execIn(t, r, filepath.Join(dir, "nope"), "true")
		if !res.DirMissing || res.ExitCode != 1 || !strings.Contains(res.StartError, "No such file or directory") {
			t.Errorf("missing directory: %+v", res)
		}
		res = execIn(t, r, "/", "limactl-mcp-no-such-command")
		if _, errs := streams(res); res.ExitCode != 127 || !strings.Contains(errs, "not found") {
			t.Errorf("missing program: exit %d, stderr %q", res.ExitCode, errs)
		}
		res = execIn(t, r, "/", "/no/such/program")
		if res.ExitCode != 127 || res.StartError == "" {
			t.Errorf("missing path: %+v", res)
		}
	})
}

// startedGroup runs a command that starts a background sleep in its own process group and
// then waits; it returns the request's ID, where its response comes, and the sleep's pid.
func startedGroup(t *testing.T, r *testRunner, timeout time.Duration) (uint64, <-chan *runnerproto.Response, int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	// "started" is written before the pid file: once the test sees the file, the word is in
	// the pipe (on a loaded machine, a signal sent between the two found an empty stdout).
	script := `sleep 300 & p=$!; echo started; echo $p > ` + pidFile + `.tmp && mv ` + pidFile + `.tmp ` + pidFile + `; wait`
	id, ch, err := r.send(&runnerproto.Request{Exec: &runnerproto.ExecRequest{Argv: []string{"sh", "-c", script}, Dir: "/",
		TimeoutMillis: timeout.Milliseconds(), HeadBytes: 1 << 10, TailBytes: 1 << 10}})
	mustDo(t, err)
	deadline := time.Now().Add(callDeadline)
	for {
		b, err := os.ReadFile(pidFile)
		if err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			mustDo(t, err)
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			return id, ch, pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command did not start within %s", callDeadline)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// gone waits (generously) for pid to end: to be gone, or a zombie nobody reaped yet.
func gone(pid int) bool {
	deadline := time.Now().Add(time.Minute)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && bytes.HasPrefix(b[i+1:], []byte(" Z")) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A timeout, and a signal request from the host (a cancelled call), kill the command's whole
// process group, and say so.
func TestProtocolExecKillsTheGroup(t *testing.T) {
	forEachRunner(t, func(t *testing.T, r *testRunner) {
		t.Run("timeout", func(t *testing.T) {
			_, ch, pid := startedGroup(t, r, 2*time.Second)
			resp, err := r.wait(ch)
			mustDo(t, err)
			res := resp.Exec
			if res == nil || !res.TimedOut || res.Canceled || res.ExitCode != -1 || res.Signal != "SIGKILL" || string(res.Stdout.Head) != "started\n" {
				t.Fatalf("timed out: %+v (error %q)", res, resp.Error)
			}
			if !gone(pid) {
				t.Fatalf("the background sleep (pid %d) outlived the timeout", pid)
			}
		})
		t.Run("signal", func(t *testing.T) {
			id, ch, pid := startedGroup(t, r, 0)
			// A signal for a request that is not running is ignored.
			mustDo(t, r.write(&runnerproto.Request{Signal: &runnerproto.SignalRequest{Target: id + 1000}}))
			if res := execIn(t, r, "/", "echo", "still here"); string(res.Stdout.Head) != "still here\n" {
				t.Fatalf("after a stray signal: %+v", res)
			}
			mustDo(t, r.write(&runnerproto.Request{Signal: &runnerproto.SignalRequest{Target: id}}))
			resp, err := r.wait(ch)
			mustDo(t, err)
			res := resp.Exec
			if res == nil || !res.Canceled || res.TimedOut || res.ExitCode != -1 || res.Signal != "SIGKILL" || string(res.Stdout.Head) != "started\n" {
				t.Fatalf("cancelled: %+v (error %q)", res, resp.Error)
			}
			if !gone(pid) {
				t.Fatalf("the background sleep (pid %d) outlived the cancel", pid)
			}
		})
	})
}

// sampleTree makes a tree with one of each kind of entry and returns its root.
func sampleTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"a.txt":            "hello\n",
		"sub/b.go":         "package b\n",
		"sub/deep/c.go":    "package c\n",
		"build/out.o":      "\x7fELF",
		"build/keep.txt":   "kept\n",
		".git/config":      "[core]\n",
		"caf\xc3\xa9 \xff": "not UTF-8\n",
	}
	for p, data := range files {
		mustDo(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
		mustDo(t, os.WriteFile(filepath.Join(root, p), []byte(data), 0o644))
	}
	mustDo(t, syscall.Chmod(filepath.Join(root, "a.txt"), 0o4751))
	mustDo(t, os.Symlink("../a.txt", filepath.Join(root, "sub", "link")))
	mustDo(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600))
	return root
}

// hostEntry is what the host itself sees at root/rel.
func hostEntry(t *testing.T, root, rel string) tree.Entry {
	t.Helper()
	fi, err := os.Lstat(filepath.Join(root, rel))
	mustDo(t, err)
	e, err := tree.EntryOf(rel, fi, func() (string, error) { return os.Readlink(filepath.Join(root, rel)) })
	mustDo(t, err)
	return e
}

func TestProtocolScan(t *testing.T) {
	forEachRunner(t, func(t *testing.T, r *testRunner) {
		root := sampleTree(t)
		resp := r.call(t, &runnerproto.Request{Scan: &runnerproto.ScanRequest{
			Root:     root,
			Patterns: []tree.Pattern{{Line: "build/"}},
			Keep:     []tree.Name{"build/keep.txt", "build/absent", "../outside"},
			Also:     []tree.Name{".git"},
		}})
		if resp.Scan == nil {
			t.Fatalf("scan: %+v", resp)
		}
		var want []tree.Entry
		for _, rel := range []string{"a.txt", "build/keep.txt", "caf\xc3\xa9 \xff", "fifo", "sub", "sub/b.go", "sub/deep", "sub/deep/c.go", "sub/link"} {
			want = append(want, hostEntry(t, root, rel))
		}
		if !reflect.DeepEqual(resp.Scan.Entries, want) || resp.Scan.RootMissing || len(resp.Scan.Errors) > 0 {
			t.Errorf("scan:\n got %+v (errors %q)\nwant %+v", resp.Scan.Entries, resp.Scan.Errors, want)
		}
		if e := hostEntry(t, root, "a.txt"); e.Mode != 0o4751 || e.Type != tree.File || e.Size != 6 {
			t.Errorf("a.txt on the host: %+v", e)
		}
		wantAlso := []tree.Entry{hostEntry(t, root, ".git"), hostEntry(t, root, ".git/config")}
		if !reflect.DeepEqual(resp.Scan.Also, wantAlso) {
			t.Errorf("also:\n got %+v\nwant %+v", resp.Scan.Also, wantAlso)
		}
		resp = r.call(t, &runnerproto.Request{Scan: &runnerproto.ScanRequest{Root: filepath.Join(root, "absent")}})
		if resp.Scan == nil || !resp.Scan.RootMissing || len(resp.Scan.Entries) != 0 {
			t.Errorf("missing root: %+v", resp.Scan)
		}
	})
}

func TestProtocolHash(t *testing.T) {
	forEachRunner(t, func(t *testing.T, r *testRunner) {
		root := sampleTree(t)
		big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
		mustDo(t, os.WriteFile(filepath.Join(root, "big"), big, 0o644))
		paths := []tree.Name{"a.txt", "sub/deep/c.go", "big", "caf\xc3\xa9 \xff", "sub/link", "sub", "fifo", "absent", "../" + tree.Name(filepath.Base(root)) + "/a.txt"}
		want := []string{tree.Hash([]byte("hello\n")), tree.Hash([]byte("package c\n")), tree.Hash(big), tree.Hash([]byte("not UTF-8\n")), "", "", "", "", ""}
		resp := r.call(t, &runnerproto.Request{Hash: &runnerproto.HashRequest{Root: root, Paths: paths}})
		if resp.Hash == nil || !slices.Equal(resp.Hash.Hashes, want) {
			t.Errorf("hash: %+v (error %q), want %q", resp.Hash, resp.Error, want)
		}
	})
}

// ReadMany answers regular files whole within its bounds, and nothing for the rest (a link, a
// directory, a fifo, a missing path, a path out of the root, a file over Each, what would pass
// Total), which the host then reads alone.
func TestProtocolReadMany(t *testing.T) {
	forEachRunner(t, func(t *testing.T, r *testRunner) {
		root := sampleTree(t)
		mustDo(t, os.WriteFile(filepath.Join(root, "empty"), nil, 0o644))
		mustDo(t, os.WriteFile(filepath.Join(root, "twelve"), []byte("twelve bytes"), 0o644))
		mustDo(t, os.WriteFile(filepath.Join(root, "again"), []byte("package d\n"), 0o644))
		paths := []tree.Name{"a.txt", "sub/deep/c.go", "empty", "caf\xc3\xa9 \xff", "sub/link", "sub", "fifo", "absent", "../" + tree.Name(filepath.Base(root)) + "/a.txt", "twelve", "again"}
		resp := r.call(t, &runnerproto.Request{ReadMany: &runnerproto.ReadManyRequest{Root: root, Paths: paths, Each: 11, Total: 27}})
		if resp.ReadMany == nil || len(resp.ReadMany.Files) != len(paths) {
			t.Fatalf("read many: %+v (error %q)", resp.ReadMany, resp.Error)
		}
		// 6 + 10 + 0 + 10 bytes: the 11th path's 10 would pass Total (27), the 10th's 12 Each.
		want := map[int]string{0: "hello\n", 1: "package c\n", 2: "", 3: "not UTF-8\n"}
		for i, f := range resp.ReadMany.Files {
			w, ok := want[i]
			if f.OK != ok || string(f.Data) != w {
				t.Errorf("%q: ok %v %q, want ok %v %q", paths[i], f.OK, f.Data, ok, w)
			}
		}
		resp = r.call(t, &runnerproto.Request{ReadMany: &runnerproto.ReadManyRequest{Root: root, Paths: paths, Each: 1, Total: runnerproto.MaxReadManyTotal + 1}})
		if resp.ReadMany != nil || resp.Error == "" {
			t.Errorf("a Total over the bound: %+v, error %q", resp.ReadMany, resp.Error)
		}
	})
}

func TestProtocolGlob(t *testing.T) {
	forEachRunner(t, func(t *testing.T, r *testRunner) {
		root := sampleTree(t)
		glob := func(pattern string, max int) *runnerproto.Response {
			return r.call(t, &runnerproto.Request{Glob: &runnerproto.GlobRequest{Dir: root, Pattern: pattern, MaxMatches: max}})
		}
		goFiles := []string{filepath.Join(root, "sub/b.go"), filepath.Join(root, "sub/deep/c.go")}
		if resp := glob("**/*.go", 100); resp.Glob == nil || !slices.Equal(resp.Glob.Matches, goFiles) || resp.Glob.Truncated {
			t.Errorf("**/*.go: %+v (error %q)", resp.Glob, resp.Error)
		}
		if resp := glob(filepath.Join(root, "sub", "*.go"), 100); resp.Glob == nil || !slices.Equal(resp.Glob.Matches, goFiles[:1]) {
			t.Errorf("absolute pattern: %+v (error %q)", resp.Glob, resp.Error)
		}
		if resp := glob("**/*.go", 1); resp.Glob == nil || len(resp.Glob.Matches) != 1 || !slices.Contains(goFiles, resp.Glob.Matches[0]) || !resp.Glob.Truncated {
			t.Errorf("one match at most: %+v (error %q)", resp.Glob, resp.Error)
		}
		if resp := glob("*.nothing", 100); resp.Glob == nil || len(resp.Glob.Matches) != 0 || resp.Error != "" {
			t.Errorf("no match: %+v (error %q)", resp.Glob, resp.Error)
		}
		if resp := glob("sub/[", 100); resp.Glob != nil || !strings.Contains(resp.Error, "invalid glob pattern") {
			t.Errorf("invalid pattern: %+v (error %q)", resp.Glob, resp.Error)
		}
	})
}

func TestProtocolRead(t *testing.T) {
	forEachRunner(t, func(t *testing.T, r *testRunner) {
		root := sampleTree(t)
		read := func(rel string, offset, limit int64) *runnerproto.Response {
			return r.call(t, &runnerproto.Request{Read: &runnerproto.ReadRequest{Path: tree.Name(filepath.Join(root, rel)), Offset: offset, Limit: limit}})
		}
		if resp := read("a.txt", 0, 100); resp.Read == nil || string(resp.Read.Data) != "hello\n" || resp.Read.Size != 6 || resp.Read.Truncated {
			t.Errorf("whole file: %+v (error %q)", resp.Read, resp.Error)
		}
		if resp := read("a.txt", 1, 3); resp.Read == nil || string(resp.Read.Data) != "ell" || resp.Read.Size != 6 || !resp.Read.Truncated {
			t.Errorf("a part: %+v (error %q)", resp.Read, resp.Error)
		}
		if resp := read("sub/deep/c.go", 8, 100); resp.Read == nil || string(resp.Read.Data) != "c\n" || resp.Read.Size != 10 || resp.Read.Truncated {
			t.Errorf("the end: %+v (error %q)", resp.Read, resp.Error)
		}
		for rel, want := range map[string]tree.Kind{"sub": tree.Dir, "sub/link": tree.Symlink, "fifo": tree.Other} {
			start := time.Now()
			if resp := read(rel, 0, 100); resp.Read == nil || resp.Read.NotRegular != want || len(resp.Read.Data) != 0 || time.Since(start) > 30*time.Second {
				t.Errorf("%s: %+v (error %q) after %v", rel, resp.Read, resp.Error, time.Since(start))
			}
		}
		if resp := read("absent", 0, 100); resp.Read == nil || !resp.Read.Missing {
			t.Errorf("missing: %+v (error %q)", resp.Read, resp.Error)
		}
		if resp := read("a.txt", 0, -1); resp.Read != nil || resp.Error == "" {
			t.Errorf("negative limit: %+v (error %q)", resp.Read, resp.Error)
		}
		// A name that is not valid UTF-8 reaches the runner intact (it used to arrive with
		// U+FFFD in place of the bad byte, and the file was "missing").
		odd := "bad\xffname.txt"
		if err := os.WriteFile(filepath.Join(root, odd), []byte("odd\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if resp := read(odd, 0, 100); resp.Read == nil || string(resp.Read.Data) != "odd\n" || resp.Read.Missing {
			t.Errorf("a name that is not UTF-8: %+v (error %q)", resp.Read, resp.Error)
		}
	})
}

func TestProtocolList(t *testing.T) {
	forEachRunner(t, func(t *testing.T, r *testRunner) {
		root := sampleTree(t)
		list := func(dir string, max int) *runnerproto.Response {
			return r.call(t, &runnerproto.Request{List: &runnerproto.ListRequest{Dir: dir, Max: max}})
		}
		resp := list(root, 100)
		if resp.List == nil || resp.List.Truncated || resp.List.NotDir {
			t.Fatalf("list: %+v (error %q)", resp.List, resp.Error)
		}
		// The directory's own order is not sorted: compare by name.
		got := map[tree.Name]runnerproto.ListEntry{}
		for _, e := range resp.List.Entries {
			got[e.Name] = e
		}
		ents, err := os.ReadDir(root)
		mustDo(t, err)
		if len(got) != len(ents) || len(resp.List.Entries) != len(ents) {
			t.Errorf("list: %d entries, %d names; the directory has %d", len(resp.List.Entries), len(got), len(ents))
		}
		rootDir, err := os.Open(root)
		mustDo(t, err)
		defer rootDir.Close()
		for _, d := range ents {
			if want := listEntry(rootDir, d); !reflect.DeepEqual(got[tree.Name(d.Name())], want) {
				t.Errorf("%q: got %+v, want %+v", d.Name(), got[tree.Name(d.Name())], want)
			}
		}
		if e := got["fifo"]; e.Type != tree.Other || os.FileMode(e.Mode)&os.ModeNamedPipe == 0 {
			t.Errorf("fifo: %+v", e)
		}
		if e := got["sub"]; e.Type != tree.Dir {
			t.Errorf("sub: %+v", e)
		}
		if resp := list(filepath.Join(root, "sub"), 100); resp.List == nil || len(resp.List.Entries) != 3 {
			t.Errorf("sub: %+v (error %q)", resp.List, resp.Error)
		} else {
			for _, e := range resp.List.Entries {
				if e.Name == "link" && (e.Type != tree.Symlink || e.Target != "../a.txt") {
					t.Errorf("sub/link: %+v", e)
				}
			}
		}
		if resp := list(root, 2); resp.List == nil || len(resp.List.Entries) != 2 || !resp.List.Truncated {
			t.Errorf("two at most: %+v (error %q)", resp.List, resp.Error)
		}
		if resp := list(filepath.Join(root, "a.txt"), 100); resp.List == nil || !resp.List.NotDir {
			t.Errorf("a file: %+v (error %q)", resp.List, resp.Error)
		}
		if resp := list(filepath.Join(root, "absent"), 100); resp.List == nil || resp.List.Errno != "ENOENT" || len(resp.List.Entries) != 0 {
			t.Errorf("missing: %+v (error %q)", resp.List, resp.Error)
		}
		if resp := list(filepath.Join(root, "a.txt", "x"), 100); resp.List == nil || resp.List.Errno != "ENOTDIR" {
			t.Errorf("through a file: %+v (error %q)", resp.List, resp.Error)
		}
	})
}

// A request the runner does not know is answered, with an error, and the runner goes on.
func TestProtocolUnknownRequest(t *testing.T) {
	forEachRunner(t, func(t *testing.T, r *testRunner) {
		if resp := r.call(t, &runnerproto.Request{}); resp.Error != "unknown request" {
			t.Errorf("empty request: %+v", resp)
		}
		if res := execIn(t, r, "/", "echo", "ok"); string(res.Stdout.Head) != "ok\n" {
			t.Errorf("after it: %+v", res)
		}
	})
}
