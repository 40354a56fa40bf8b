//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBenchmarkAgents runs several scripted agents at once on one VM (issue 30, "eight agents
// at once"): each agent is one `limactl-mcp serve INSTANCE` process with its own MCP client,
// doing the same seeded script of mixed calls (reads, writes, replaces, greps, globs, listings,
// short commands, a background server started and later killed, a checkpoint). A lone agent
// doing the same script, in the same run, is the baseline. Two modes: with an agent's think
// time between calls (0.5-2 s, seeded), and back to back. Variants: named sessions of one
// project ("sessions"), one project each ("projects"), named sessions of one project under
// a network policy ("network", --network=none unless LIMACTL_MCP_BENCH_NETWORK says another).
// Opt-in:
//
//	LIMACTL_MCP_BENCH=1 go test -tags e2e -count=1 -v -timeout 60m -run TestBenchmarkAgents ./test/e2e/
//
// LIMACTL_MCP_BENCH_VARIANTS (default "sessions"; a comma-separated list, or "all"),
// LIMACTL_MCP_BENCH_AGENTS (default 8), LIMACTL_MCP_BENCH_CALLS (default 200 per agent and
// mode) and LIMACTL_MCP_BENCH_THINK (default 1, multiplies the think time) set the size. It
// fails only when a call fails or answers wrong; it never asserts on times. The tables are
// markdown rows for docs/benchmarks.md.
func TestBenchmarkAgents(t *testing.T) {
	if os.Getenv("LIMACTL_MCP_BENCH") != "1" {
		t.Skip("set LIMACTL_MCP_BENCH=1 to run the many-agents benchmark")
	}
	cfg := agentBenchConfig{
		agents:  envInt(t, "LIMACTL_MCP_BENCH_AGENTS", 8),
		calls:   envInt(t, "LIMACTL_MCP_BENCH_CALLS", 200),
		think:   1,
		network: "none",
	}
	if v := os.Getenv("LIMACTL_MCP_BENCH_NETWORK"); v != "" {
		cfg.network = v
	}
	if cfg.calls < 20 {
		t.Fatalf("LIMACTL_MCP_BENCH_CALLS=%d: want 20 or more (the script places a background server and a checkpoint in it)", cfg.calls)
	}
	if v := os.Getenv("LIMACTL_MCP_BENCH_THINK"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 10 {
			t.Fatalf("LIMACTL_MCP_BENCH_THINK=%q: want a number from 0 to 10 (it multiplies the 0.5-2 s think time)", v)
		}
		cfg.think = f
	}
	variants := []string{"sessions"}
	if v := os.Getenv("LIMACTL_MCP_BENCH_VARIANTS"); v == "all" {
		variants = []string{"sessions", "projects", "network"}
	} else if v != "" {
		variants = strings.Split(v, ",")
	}
	for _, v := range variants {
		if !slices.Contains([]string{"sessions", "projects", "network"}, v) {
			t.Fatalf("LIMACTL_MCP_BENCH_VARIANTS: unknown variant %q (want sessions, projects, network or all)", v)
		}
	}
	cfg.vcpus, _ = strconv.Atoi(strings.TrimSpace(guestShell(t, "nproc")))
	t.Logf("%s\n%d agents, %d calls each per mode, think time 0.5-2 s × %g; variants %v; guest vCPUs %d",
		machine(t), cfg.agents, cfg.calls, cfg.think, variants, cfg.vcpus)
	start := time.Now()
	for _, v := range variants {
		t.Run(v, func(t *testing.T) {
			t0 := time.Now()
			benchAgentsVariant(t, cfg, v)
			t.Logf("variant %s took %s", v, time.Since(t0).Round(time.Second))
		})
	}
	t.Logf("TestBenchmarkAgents: %s in all", time.Since(start).Round(time.Second))
}

type agentBenchConfig struct {
	agents, calls, vcpus int
	think                float64
	network              string // the network variant's --network value
}

// benchAgent is one agent: its serve process and what its start took.
type benchAgent struct {
	name    string
	dir     string
	s       *server
	stop    func()
	first   time.Duration // from starting the process to the first tool call's answer
	staging time.Duration // what serve's log says staging took (0: not in the log)
}

// agentRun is what one agent saw in one mode.
type agentRun struct {
	calls []agentCall
	wall  time.Duration
}

type agentCall struct {
	kind    string
	d       time.Duration
	problem string
}

// agentProject is every agent's project: 30 source files of 43 lines, each line with a
// needle of its own number (0-1199), and a README.
func agentProject() map[string]string {
	files := map[string]string{"README.md": "# bench\n\nA project for the many-agents benchmark.\n"}
	for f := range agentFiles {
		var b strings.Builder
		fmt.Fprintf(&b, "package src\n\n// file %02d\n", f)
		for l := range agentLines {
			fmt.Fprintf(&b, "func f%02d_%02d() int { return %d } // needle %d\n", f, l, l, f*agentLines+l)
		}
		files[fmt.Sprintf("src/file%02d.go", f)] = b.String()
	}
	return files
}

const agentFiles, agentLines = 30, 40

func benchAgentsVariant(t *testing.T, cfg agentBenchConfig, variant string) {
	files := agentProject()
	// The lone agent and the others: the session or project each one works on.
	var dirs []string
	var names []string
	var extra []string
	switch variant {
	case "sessions", "network":
		dir := project(t, files)
		for i := range cfg.agents + 1 {
			dirs = append(dirs, dir)
			names = append(names, agentName(i))
		}
		if variant == "network" {
			extra = []string{"--network=" + cfg.network}
		}
	case "projects":
		for range cfg.agents + 1 {
			dirs = append(dirs, project(t, files))
			names = append(names, "")
		}
	}
	// Discarded when the variant ends, after its servers stopped (cleanups run last first).
	for i := range dirs {
		discardSessionOnCleanup(t, dirs[i], names[i])
	}
	startArgs := func(i int) []string {
		args := []string{"serve", instanceName}
		if names[i] != "" {
			args = append(args, "--session", names[i])
		}
		return append(args, extra...)
	}
	label := func(i int) string {
		if i == 0 {
			return "lone"
		}
		return fmt.Sprintf("agent %d", i)
	}

	// The lone agent: its start (with its staging, alone), the script in both modes, its
	// memory; then it stops, before the others start.
	lone, err := startBenchAgent(t, label(0), dirs[0], startArgs(0))
	if err != nil {
		t.Fatalf("starting the lone agent: %v", err)
	}
	lone.registerStop(t)
	steps := agentScript(cfg.calls)
	bgCommand := agentBackgroundServer(t, lone)
	loneThink := runAgentScript(lone, "think", steps, rand.New(rand.NewPCG(0, 30)), cfg.think, bgCommand)
	loneB2B := runAgentScript(lone, "b2b", steps, nil, 0, bgCommand)
	loneMem := serveMemory(t, lone.s)
	loneRunners := guestRunners(t)
	lone.stop()

	// The others start together; each one's first answer.
	agents := make([]*benchAgent, cfg.agents)
	errs := make([]error, cfg.agents)
	var wg sync.WaitGroup
	for i := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			agents[i], errs[i] = startBenchAgent(t, label(i+1), dirs[i+1], startArgs(i+1))
		}()
	}
	wg.Wait()
	for i, a := range agents {
		if a != nil {
			a.registerStop(t)
		}
		if errs[i] != nil {
			t.Errorf("starting %s: %v", label(i+1), errs[i])
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	runAll := func(run string, think float64) ([]agentRun, time.Duration) {
		runs := make([]agentRun, len(agents))
		t0 := time.Now()
		var wg sync.WaitGroup
		for i, a := range agents {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var rng *rand.Rand
				if think > 0 {
					// Agent i's think times: its own seed, the lone agent's for the first.
					rng = rand.New(rand.NewPCG(uint64(i), 30))
				}
				runs[i] = runAgentScript(a, run, steps, rng, think, bgCommand)
			}()
		}
		wg.Wait()
		return runs, time.Since(t0)
	}
	think, thinkWall := runAll("think", cfg.think)
	b2b, b2bWall := runAll("b2b", 0)
	var mems []string
	for _, a := range agents {
		mems = append(mems, serveMemory(t, a.s))
	}
	runners := guestRunners(t)

	var b strings.Builder
	fmt.Fprintf(&b, "\nVariant %s: %d agents (%s), %d calls each per mode, guest vCPUs %d\n", variant, cfg.agents, agentVariantWords(variant, cfg.network), cfg.calls, cfg.vcpus)
	fmt.Fprintf(&b, "\nStarts (the %d together; the lone agent alone, before them):\n\n| agent | first answer | staging (its log) | serve VmHWM / VmRSS after both modes |\n|---|---:|---:|---|\n", cfg.agents)
	fmt.Fprintf(&b, "| lone | %s | %s | %s |\n", ms(lone.first), msOrNone(lone.staging), loneMem)
	var firsts []time.Duration
	for i, a := range agents {
		firsts = append(firsts, a.first)
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", a.name, ms(a.first), msOrNone(a.staging), mems[i])
	}
	fmt.Fprintf(&b, "| max of the %d | %s | | |\n", cfg.agents, ms(slices.Max(firsts)))
	fmt.Fprintf(&b, "\nTarget: each first answer within 2 s + the lone agent's staging time (%s): %s.\n",
		msOrNone(lone.staging), ms(2*time.Second+lone.staging))
	writeAgentMode(&b, fmt.Sprintf("think time 0.5-2 s × %g", cfg.think), loneThink, think, thinkWall, cfg)
	writeAgentMode(&b, "back to back", loneB2B, b2b, b2bWall, cfg)
	fmt.Fprintf(&b, "\nGuest runners while the lone agent ran (pid user VmHWM VmRSS KiB):\n%s", loneRunners)
	fmt.Fprintf(&b, "Guest runners while the %d ran, after both modes (pid user VmHWM VmRSS KiB):\n%s", cfg.agents, runners)
	fmt.Fprintf(&b, "Targets: serve RSS ≤ 35 MB each, a runner's ≤ 15 MB.\n")
	t.Log(b.String())

	var problems []string
	count := 0
	for _, m := range []struct {
		mode string
		runs []agentRun
	}{{"think time", append([]agentRun{loneThink}, think...)}, {"back to back", append([]agentRun{loneB2B}, b2b...)}} {
		for i, r := range m.runs {
			for j, c := range r.calls {
				if c.problem == "" {
					continue
				}
				count++
				if len(problems) < 20 {
					problems = append(problems, fmt.Sprintf("%s, %s, call %d (%s): %s", m.mode, label(i), j, c.kind, c.problem))
				}
			}
		}
	}
	if count > 0 {
		t.Errorf("%d calls failed or answered wrong:\n%s", count, strings.Join(problems, "\n"))
	}
}

func agentName(i int) string {
	if i == 0 {
		return "lone"
	}
	return fmt.Sprintf("a%d", i)
}

func agentVariantWords(variant, network string) string {
	switch variant {
	case "sessions":
		return "named sessions of one project"
	case "projects":
		return "one project each"
	default:
		return "named sessions of one project, --network=" + network
	}
}

// writeAgentMode writes one mode's tables: per agent, pooled, per kind of call, and the
// aggregate rate against the lone agent's.
func writeAgentMode(b *strings.Builder, mode string, lone agentRun, runs []agentRun, wall time.Duration, cfg agentBenchConfig) {
	l50, l90, l99 := pct(durations(lone.calls, ""), 50), pct(durations(lone.calls, ""), 90), pct(durations(lone.calls, ""), 99)
	fmt.Fprintf(b, "\nMode: %s (per-call times exclude think time)\n\n", mode)
	fmt.Fprintf(b, "| agent | p50 | p90 | p99 | p50 / lone | p99 / lone | wall | errors |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(b, "| lone | %s | %s | %s | 1.0× | 1.0× | %s | %d |\n", ms(l50), ms(l90), ms(l99), lone.wall.Round(100*time.Millisecond), errorCount(lone.calls))
	var pooled []agentCall
	var p50s []time.Duration
	errs := 0
	for i, r := range runs {
		ds := durations(r.calls, "")
		p50s = append(p50s, pct(ds, 50))
		errs += errorCount(r.calls)
		pooled = append(pooled, r.calls...)
		fmt.Fprintf(b, "| agent %d | %s | %s | %s | %s | %s | %s | %d |\n", i+1, ms(pct(ds, 50)), ms(pct(ds, 90)), ms(pct(ds, 99)),
			ratio(pct(ds, 50), l50), ratio(pct(ds, 99), l99), r.wall.Round(100*time.Millisecond), errorCount(r.calls))
	}
	all := durations(pooled, "")
	fmt.Fprintf(b, "| all %d pooled | %s | %s | %s | %s | %s | %s | %d |\n", len(runs), ms(pct(all, 50)), ms(pct(all, 90)), ms(pct(all, 99)),
		ratio(pct(all, 50), l50), ratio(pct(all, 99), l99), wall.Round(100*time.Millisecond), errs)
	fmt.Fprintf(b, "\nFairness (max / min of the agents' p50): %s. Targets with think time: pooled p50 ≤ 1.2× the lone agent's, p99 ≤ 2×; fairness ≤ 1.5×.\n",
		ratio(slices.Max(p50s), slices.Min(p50s)))
	loneRate := float64(len(lone.calls)) / lone.wall.Seconds()
	rate := float64(len(pooled)) / wall.Seconds()
	fmt.Fprintf(b, "Aggregate: %.1f calls/s from the %d together; the lone agent %.1f calls/s; %d vCPUs × lone = %.1f calls/s; aggregate / (vCPUs × lone) = %.2f (back-to-back target ≥ 0.8).\n",
		rate, len(runs), loneRate, cfg.vcpus, float64(cfg.vcpus)*loneRate, rate/(float64(cfg.vcpus)*loneRate))
	fmt.Fprintf(b, "\n| call | count per agent | lone p50 | pooled p50 | ratio | lone p99 | pooled p99 | ratio |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	var kinds []string
	for _, c := range lone.calls {
		if !slices.Contains(kinds, c.kind) {
			kinds = append(kinds, c.kind)
		}
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		ld, pd := durations(lone.calls, k), durations(pooled, k)
		if len(pd) == 0 {
			continue
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", k, len(ld), ms(pct(ld, 50)), ms(pct(pd, 50)), ratio(pct(pd, 50), pct(ld, 50)),
			ms(pct(ld, 99)), ms(pct(pd, 99)), ratio(pct(pd, 99), pct(ld, 99)))
	}
}

// durations are the times of calls of kind ("" for all).
func durations(calls []agentCall, kind string) []time.Duration {
	var ds []time.Duration
	for _, c := range calls {
		if kind == "" || c.kind == kind {
			ds = append(ds, c.d)
		}
	}
	if len(ds) == 0 {
		return []time.Duration{0}
	}
	return ds
}

func errorCount(calls []agentCall) int {
	n := 0
	for _, c := range calls {
		if c.problem != "" {
			n++
		}
	}
	return n
}

func msOrNone(d time.Duration) string {
	if d == 0 {
		return "not logged"
	}
	return ms(d)
}

var stagingTook = regexp.MustCompile(`working directory (?:staged|restaged).* took=([0-9.]+[a-zµ]+)`)

// startBenchAgent starts serve (as the user, in dir), connects a client and makes its first
// call; it returns an error instead of failing the test, for starts from several goroutines.
// The caller registers its stop with registerStop (on the test's goroutine).
func startBenchAgent(t *testing.T, name, dir string, args []string) (*benchAgent, error) {
	procCtx, cancel := context.WithCancel(context.Background())
	cmd := vm.Command(procCtx, "limactl-mcp", args...)
	cmd.Dir = dir
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "limactl-mcp-e2e", Version: "v0.0.1"}, nil)
	cctx, ccancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer ccancel()
	t0 := time.Now()
	session, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("connecting to `limactl-mcp %s`: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	a := &benchAgent{name: name, dir: dir, s: &server{Session: session, Stderr: stderr, Dir: dir, Connect: time.Since(t0), PID: cmd.Process.Pid}}
	var once sync.Once
	a.stop = func() {
		once.Do(func() {
			if err := session.Close(); err != nil {
				t.Logf("closing the session of %s: %v", name, err)
			}
			cancel()
		})
	}
	if _, p := callChecked(cctx, session, "list_directory", map[string]any{"path": dir}); p != "" {
		a.stop()
		return nil, fmt.Errorf("%s's first call, list_directory: %s\nstderr:\n%s", name, p, stderr.String())
	}
	a.first = time.Since(t0)
	if m := stagingTook.FindStringSubmatch(stderr.String()); m != nil {
		a.staging, _ = time.ParseDuration(m[1])
	}
	return a, nil
}

// registerStop stops the agent's server when the test ends (logging its stderr if it failed).
func (a *benchAgent) registerStop(t *testing.T) {
	t.Cleanup(func() {
		a.stop()
		if t.Failed() {
			t.Logf("stderr of %s's server:\n%s", a.name, a.s.Stderr.String())
		}
	})
}

// agentStep is one call of the script; n varies its arguments.
type agentStep struct {
	kind string
	n    int
}

// agentScript is the script every agent follows (the same seed for all): a file the replaces
// edit first, then mixed calls, with a background server started at a quarter, its output read
// at three eighths, killed at half, and a checkpoint at three quarters.
func agentScript(n int) []agentStep {
	rng := rand.New(rand.NewPCG(30, 8))
	steps := make([]agentStep, n)
	for i := range steps {
		kind := ""
		switch {
		case i == 0:
			kind = "write counter"
		case i == n/4:
			kind = "background start"
		case i == n*3/8:
			kind = "background read"
		case i == n/2:
			kind = "background kill"
		case i == n*3/4:
			kind = "checkpoint"
		default:
			switch r := rng.IntN(100); {
			case r < 25:
				kind = "run_shell_command"
			case r < 45:
				kind = "read_file"
			case r < 55:
				kind = "write_file"
			case r < 65:
				kind = "replace"
			case r < 75:
				kind = "search_file_content"
			case r < 85:
				kind = "glob"
			default:
				kind = "list_directory"
			}
		}
		steps[i] = agentStep{kind: kind, n: rng.IntN(agentFiles * agentLines)}
	}
	return steps
}

// agentBackgroundServer is the command of the script's background server: a TCP server on a
// free loopback port in python3 when the guest has it, else a shell that waits.
func agentBackgroundServer(t *testing.T, a *benchAgent) []string {
	if strings.TrimSpace(shellOK(t, a.s.Session, a.dir, "command -v python3 >/dev/null && echo yes || echo no")) == "yes" {
		return []string{"python3", "-u", "-c", `import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
print("serving on port", s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
    c.close()
`}
	}
	t.Log("the guest has no python3: the background server is a shell that waits")
	return []string{"sh", "-c", "echo serving; exec sleep 3600"}
}

// runAgentScript runs the script on a's server, in the directory work/RUN of its copy;
// think (nil for back to back) draws the think time before each call after the first,
// 0.5-2 s × scale. Every answer is checked; a wrong one is a problem of that call.
func runAgentScript(a *benchAgent, run string, steps []agentStep, think *rand.Rand, scale float64, bgCommand []string) agentRun {
	dir := a.dir
	work := path.Join(dir, "work", run)
	counter := path.Join(work, "counter.txt")
	count := 0
	bgID := 0
	calls := make([]agentCall, len(steps))
	t0 := time.Now()
	for i, st := range steps {
		if think != nil && i > 0 {
			time.Sleep(time.Duration((0.5 + 1.5*think.Float64()) * scale * float64(time.Second)))
		}
		f := st.n / agentLines
		file := path.Join(dir, "src", fmt.Sprintf("file%02d.go", f))
		var name string
		var args map[string]any
		var check func(m map[string]any) string
		switch st.kind {
		case "write counter":
			name, args = "write_file", map[string]any{"path": counter, "content": "count 0\n"}
		case "replace":
			name, args = "replace", map[string]any{"file_path": counter, "old_string": fmt.Sprintf("count %d\n", count), "new_string": fmt.Sprintf("count %d\n", count+1)}
			check = func(m map[string]any) string {
				if m["replacements"] != 1.0 {
					return fmt.Sprintf("replacements %v", m["replacements"])
				}
				count++
				return ""
			}
		case "write_file":
			name, args = "write_file", map[string]any{"path": path.Join(work, fmt.Sprintf("n%03d.txt", i)), "content": strings.Repeat(fmt.Sprintf("note %d\n", i), 20)}
		case "read_file":
			name, args = "read_file", map[string]any{"path": file}
			check = func(m map[string]any) string {
				if c, _ := m["content"].(string); !strings.Contains(c, fmt.Sprintf("// file %02d\n", f)) || strings.Count(c, "\n") != agentLines+3 {
					return fmt.Sprintf("content %q", trim(c))
				}
				return ""
			}
		case "search_file_content":
			name, args = "search_file_content", map[string]any{"path": dir, "pattern": fmt.Sprintf("needle %d$", st.n)}
			check = func(m map[string]any) string {
				out, _ := m["git_grep_output"].(string)
				if want := fmt.Sprintf("src/file%02d.go:%d:", f, st.n%agentLines+4); !strings.Contains(out, want) || strings.Count(out, "\n") != 1 {
					return fmt.Sprintf("output %q, want one line with %q", trim(out), want)
				}
				return ""
			}
		case "glob":
			name, args = "glob", map[string]any{"path": dir, "pattern": "src/*.go"}
			check = func(m map[string]any) string {
				if got, _ := m["matches"].([]any); len(got) != agentFiles {
					return fmt.Sprintf("%d matches", len(got))
				}
				return ""
			}
		case "list_directory":
			name, args = "list_directory", map[string]any{"path": path.Join(dir, "src")}
			check = func(m map[string]any) string {
				if got, _ := m["entries"].([]any); len(got) != agentFiles {
					return fmt.Sprintf("%d entries", len(got))
				}
				return ""
			}
		case "run_shell_command":
			var command []string
			var want string
			switch st.n % 3 {
			case 0:
				command, want = []string{"true"}, ""
			case 1:
				command, want = []string{"sh", "-c", "wc -l < src/" + fmt.Sprintf("file%02d.go", f)}, fmt.Sprintf("%d\n", agentLines+3)
			default:
				command, want = []string{"ls", "src"}, ""
			}
			name, args = "run_shell_command", map[string]any{"command": command, "directory": dir}
			check = func(m map[string]any) string {
				out, _ := m["stdout"].(string)
				if m["exit_code"] != 0.0 {
					return fmt.Sprintf("exit code %v, stderr %q", m["exit_code"], m["stderr"])
				}
				if command[0] == "ls" && strings.Count(out, "\n") != agentFiles || command[0] == "sh" && strings.TrimSpace(out) != strings.TrimSpace(want) {
					return fmt.Sprintf("stdout %q", trim(out))
				}
				return ""
			}
		case "background start":
			name, args = "run_shell_command", map[string]any{"command": bgCommand, "directory": dir, "background": true}
			check = func(m map[string]any) string {
				id, _ := m["background_id"].(float64)
				if id < 1 {
					return fmt.Sprintf("no background_id: %v", m)
				}
				bgID = int(id)
				return ""
			}
		case "background read":
			name, args = "read_background_output", map[string]any{"id": bgID}
		case "background kill":
			name, args = "kill_background_process", map[string]any{"id": bgID}
		case "checkpoint":
			name, args = "checkpoint", map[string]any{"label": "bench " + run}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		c0 := time.Now()
		m, p := callChecked(ctx, a.s.Session, name, args)
		calls[i] = agentCall{kind: st.kind, d: time.Since(c0)}
		cancel()
		if p == "" && check != nil {
			p = check(m)
		}
		calls[i].problem = p
	}
	return agentRun{calls: calls, wall: time.Since(t0)}
}

// serveMemory is the peak and current resident memory of s's serve process on the host.
func serveMemory(t *testing.T, s *server) string {
	t.Helper()
	pid := s.PID
	if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) == "runuser" {
		pid = childPID(t, pid) // started as the user, through runuser
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "gone"
	}
	field := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `:\s+(\d+) kB`).FindSubmatch(status)
		if m == nil {
			return "?"
		}
		kb, _ := strconv.Atoi(string(m[1]))
		return fmt.Sprintf("%.1f MB", float64(kb)/1024)
	}
	return field("VmHWM") + " / " + field("VmRSS")
}

// guestRunners lists the runners serving in the guest (the runner-ID processes started with
// "serve", not their background supervisors): pid, user, VmHWM and VmRSS in KiB, one a line.
func guestRunners(t *testing.T) string {
	t.Helper()
	return guestShell(t, `ps -eo pid=,user:32=,comm=,args= | awk '$3 ~ /^runner-/ && $4 ~ /limactl-mcp\/runner-/ && $5 == "serve" {print $1, $2}' |
while read -r pid user; do
	echo "$pid $user $(awk '/^VmHWM:/ {h=$2} /^VmRSS:/ {r=$2} END {print h, r}' /proc/$pid/status 2>/dev/null)"
done`)
}
