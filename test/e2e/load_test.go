//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLoadManyCallsInFlight sends hundreds of mixed tool calls at once to one server, as agents
// that call tools in parallel do while the guest is busy: every call is answered, and every
// answer is right (before the runner read output to its end, 16-22 of 500 came back with empty
// output).
func TestLoadManyCallsInFlight(t *testing.T) {
	s := startServer(t, nil, "limactl-mcp", "serve", instanceName)
	name := fmt.Sprintf("load-%d", time.Now().UnixNano()%1e9)
	dir := path.Join(s.Dir, name)
	const n = 500
	// Relative paths in the script: a workdir under /tmp is staged at another path in the guest,
	// and only the tools' path arguments are mapped.
	shellOK(t, s.Session, s.Dir, fmt.Sprintf("mkdir -p %s && cd %s && for i in $(seq 3 4 %d); do echo \"needle $i\"; done > needles.md", name, name, n))
	type outcome struct {
		kind, problem string
	}
	results := make([]outcome, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			call := func(name string, args map[string]any) (map[string]any, string) {
				return callChecked(ctx, s.Session, name, args)
			}
			var o outcome
			switch i % 4 {
			case 0:
				o.kind = "shell"
				m, p := call("run_shell_command", map[string]any{"directory": dir, "command": []string{"sh", "-c", fmt.Sprintf("seq 1 %d; echo shell %d", 50+i, i)}})
				var want strings.Builder
				for k := 1; k <= 50+i; k++ {
					fmt.Fprintf(&want, "%d\n", k)
				}
				fmt.Fprintf(&want, "shell %d\n", i)
				if p == "" && m["stdout"] != want.String() {
					p = fmt.Sprintf("stdout of %d bytes, want %d (%q...)", len(fmt.Sprint(m["stdout"])), want.Len(), trim(fmt.Sprint(m["stdout"])))
				}
				o.problem = p
			case 1:
				o.kind = "write+read"
				f := path.Join(dir, fmt.Sprintf("f%03d.txt", i))
				content := strings.Repeat(fmt.Sprintf("file %d\n", i), 20+i)
				if _, p := call("write_file", map[string]any{"path": f, "content": content}); p != "" {
					o.problem = "write: " + p
					break
				}
				m, p := call("read_file", map[string]any{"path": f})
				if p == "" && m["content"] != content {
					p = fmt.Sprintf("read back %q...", trim(fmt.Sprint(m["content"])))
				}
				o.problem = p
			case 2:
				o.kind = "glob"
				_, o.problem = call("glob", map[string]any{"path": dir, "pattern": "**/*.txt"})
			case 3:
				o.kind = "search"
				m, p := call("search_file_content", map[string]any{"path": dir, "pattern": fmt.Sprintf("^needle %d$", i)})
				if want := fmt.Sprintf("needles.md:%d:needle %d\n", i/4+1, i); p == "" && m["git_grep_output"] != want {
					p = fmt.Sprintf("search output %q, want %q", trim(fmt.Sprint(m["git_grep_output"])), want)
				}
				o.problem = p
			}
			results[i] = o
		}()
	}
	wg.Wait()
	took := time.Since(start)
	var unanswered, wrong int
	var problems []string
	for i, o := range results {
		if o.problem == "" {
			continue
		}
		if strings.HasPrefix(o.problem, "unanswered") {
			unanswered++
		} else {
			wrong++
		}
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf("call %d (%s): %s", i, o.kind, o.problem))
		}
	}
	t.Logf("%d calls in flight: answered in %v; %d unanswered, %d wrong", n, took.Round(time.Millisecond), unanswered, wrong)
	if unanswered+wrong > 0 {
		t.Fatalf("%d unanswered, %d wrong of %d:\n%s", unanswered, wrong, n, strings.Join(problems, "\n"))
	}
	// Every write landed in the staged copy.
	if got := strings.TrimSpace(shellOK(t, s.Session, dir, "ls | grep -c '^f.*txt$'")); got != fmt.Sprint(n/4) {
		t.Errorf("%s files in the staged copy, want %d", got, n/4)
	}
}

func trim(s string) string {
	if len(s) > 60 {
		return s[:60]
	}
	return s
}
