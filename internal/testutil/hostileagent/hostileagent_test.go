package hostileagent

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

var testEnv = Env{
	HostIP: "192.168.5.2", Allowed: "ha-a.test", AllowedPort: 40001, VictimAllowed: "ha-v.test",
	Forbidden: []string{"ha-f1.test", "ha-f2.test"}, ForbiddenPort: 40002, ForbiddenUDP: 40003, Token: "hatok0123abcd",
	RootPID: 4242, Home: "/var/lib/limactl-mcp/agents/lmcp-x", Copy: "/var/lib/limactl-mcp/agents/lmcp-x/limactl-mcp-staged/ha-x",
	StagedDir: "/var/lib/limactl-mcp/agents/lmcp-x/limactl-mcp-staged", VictimHome: "/var/lib/limactl-mcp/agents/lmcp-y",
	VictimCopy: "/home/u/it's a copy",
}

// Every class runs in the short plan, and a seed gives the same plan and steps again.
func TestPlanCoversEveryClassAndReplays(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		plan := Plan(seed, 5, 0)
		seen := map[string]bool{}
		for _, seq := range plan {
			for _, c := range seq {
				seen[c.Name] = true
			}
		}
		if len(seen) != len(Classes) || len(plan) != 2 {
			t.Fatalf("seed %d: %d sequences, classes %v", seed, len(plan), seen)
		}
		again := Plan(seed, 5, 0)
		for i := range plan {
			for j := range plan[i] {
				a := plan[i][j].Step(StepRand(seed, i, j), testEnv)
				b := again[i][j].Step(StepRand(seed, i, j), testEnv)
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("seed %d step %d/%d differs on replay", seed, i, j)
				}
			}
		}
	}
	if n := len(Plan(1, 5, 6)); n != 8 {
		t.Errorf("the long plan has %d sequences", n)
	}
}

// Every script a class can draw is valid bash, and its Python is valid Python.
func TestScriptsParse(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed to check the scripts")
	}
	dir := t.TempDir()
	n := 0
	for _, long := range []bool{false, true} {
		e := testEnv
		e.Long = long
		for _, c := range Classes {
			for s := int64(-1); s < 30; s++ {
				st := c.Gen(StepRand(s, 0, 0), e)
				if s < 0 && c.Known != nil {
					st = c.Known(e)
				}
				if st.Class != c.Name || st.Script == "" || st.Detail == "" {
					t.Fatalf("%s: %+v", c.Name, st)
				}
				f := filepath.Join(dir, "s.sh")
				if err := os.WriteFile(f, []byte(st.Script), 0o644); err != nil {
					t.Fatal(err)
				}
				if out, err := exec.Command(bash, "-n", f).CombinedOutput(); err != nil {
					t.Fatalf("%s (%s): bash -n: %v\n%s\n%s", c.Name, st.Detail, err, out, st.Script)
				}
				n++
			}
		}
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Logf("%d scripts checked; no python3 on this host to check the embedded Python", n)
		return
	}
	for name, src := range map[string]string{"fake": fakeProxyPy, "flood": socketFloodPy, "dns": dnsPy, "unix": unixPy, "logflood": floodPy, "direct": directPy} {
		cmd := exec.Command(py, "-c", "import ast,sys; ast.parse(sys.stdin.read())")
		cmd.Stdin = strings.NewReader(src)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: not valid Python: %v\n%s", name, err, out)
		}
	}
}

func TestSnapshotDiff(t *testing.T) {
	a := ParseSnapshot("/etc\td\t0:0\t755\t2\n/etc/cron.d\td\t0:0\t755\t3\n/etc/x\tf\t0:0\t644\t4\nbad line\n", nil)
	b := ParseSnapshot("/etc\td\t0:0\t755\t2\n/etc/cron.d\td\t0:0\t755\t3\n/etc/cron.d/ha-x\td\t1001:1001\t755\t9\n/etc/x\tf\t1001:0\t644\t4\n/skip\tf\t0:0\t1\t1\n", func(p string) bool { return p == "/skip" })
	got := Diff(a, b)
	want := []string{"added /etc/cron.d/ha-x (d 1001:1001 755 9)", "changed /etc/x (f 0:0 644 4 -> f 1001:0 644 4)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Diff = %q, want %q", got, want)
	}
	if d := Diff(a, a); len(d) != 0 {
		t.Errorf("no change: %q", d)
	}
	if s := SnapshotScript(map[string]int{"/etc": 1, "/a b": 2}); !strings.Contains(s, "find '/a b' -maxdepth 2") || !strings.Contains(s, "find '/etc' -maxdepth 1") || strings.Contains(s, "sudo") {
		t.Errorf("SnapshotScript: %s", s)
	}
}

func TestShortPlan(t *testing.T) {
	for seed := int64(0); seed < 50; seed++ {
		plan := Short(seed, 1)
		if len(plan) != 1 || len(plan[0]) != len(ShortClasses)+1 {
			t.Fatalf("seed %d: plan %v", seed, plan)
		}
		seen := map[string]bool{}
		for _, p := range plan[0] {
			if seen[p.Class.Name] {
				t.Fatalf("seed %d: %s twice", seed, p.Class.Name)
			}
			seen[p.Class.Name] = true
			if slices.Contains(ShortClasses, p.Class.Name) != p.Known {
				t.Fatalf("seed %d: %s known=%v", seed, p.Class.Name, p.Known)
			}
		}
		for _, n := range ShortClasses {
			if !seen[n] {
				t.Fatalf("seed %d: %s missing", seed, n)
			}
		}
	}
}
