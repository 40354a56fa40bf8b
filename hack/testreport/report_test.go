package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goTestJSON runs the real `go test -json` on a module of the given test file.
func goTestJSON(t *testing.T, testFile string, args ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.test/fixture\n\ngo 1.24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fixture_test.go"), []byte(testFile), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"test", "-json", "-count=1"}, append(args, ".")...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	out, _ := cmd.Output() // a failing fixture exits 1; the events say why
	if len(out) == 0 {
		t.Fatal("go test -json printed nothing")
	}
	return out
}

func runReport(events []byte, top int) (string, bool) {
	var out bytes.Buffer
	r := newReport(&out)
	ok := r.read(bytes.NewReader(events))
	r.slowest(top)
	return out.String(), ok
}

func TestReportPrintsFailuresAndTheSlowest(t *testing.T) {
	events := goTestJSON(t, `package fixture

import (
	"testing"
	"time"
)

func TestQuiet(t *testing.T) { t.Log("QUIET-LOG") }

func TestSlow(t *testing.T) { time.Sleep(300 * time.Millisecond); t.Log("SLOW-LOG") }

func TestBroken(t *testing.T) {
	t.Run("inner", func(t *testing.T) { t.Log("BROKEN-CONTEXT"); t.Error("BROKEN-REASON") })
}
`)
	got, ok := runReport(events, 5)
	if ok {
		t.Errorf("a failed test reported as success:\n%s", got)
	}
	for _, want := range []string{"BROKEN-CONTEXT", "BROKEN-REASON", "--- FAIL: TestBroken", "FAIL\texample.test/fixture", "the 3 slowest of 3 tests", "fail  TestBroken"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"QUIET-LOG", "SLOW-LOG"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("a passing test's log %q printed:\n%s", unwanted, got)
		}
	}
	// TestSlow sleeps; it is listed first.
	list := got[strings.Index(got, "slowest"):]
	if !strings.Contains(strings.SplitN(list, "\n", 3)[1], "TestSlow") {
		t.Errorf("TestSlow is not first among the slowest:\n%s", list)
	}
}

func TestReportPassingRunSucceeds(t *testing.T) {
	got, ok := runReport(goTestJSON(t, "package fixture\n\nimport \"testing\"\n\nfunc TestFine(t *testing.T) {}\n"), 3)
	if !ok || !strings.Contains(got, "ok  \texample.test/fixture") || !strings.Contains(got, "pass  TestFine") {
		t.Errorf("ok=%v, output:\n%s", ok, got)
	}
}

func TestReportShowsTheTestsATimeoutCut(t *testing.T) {
	events := goTestJSON(t, `package fixture

import (
	"testing"
	"time"
)

func TestHangs(t *testing.T) { t.Log("HANG-CONTEXT"); time.Sleep(time.Minute) }
`, "-timeout", "2s")
	got, ok := runReport(events, 3)
	if ok || !strings.Contains(got, "TestHangs was still running") || !strings.Contains(got, "HANG-CONTEXT") {
		t.Errorf("ok=%v, output:\n%s", ok, got)
	}
}

func TestReportBuildFailure(t *testing.T) {
	got, ok := runReport(goTestJSON(t, "package fixture\n\nfunc broken( {\n"), 3)
	if ok || !strings.Contains(got, "fixture_test.go") {
		t.Errorf("ok=%v, output:\n%s", ok, got)
	}
}

func TestReportNothingRan(t *testing.T) {
	if got, ok := runReport(nil, 3); ok {
		t.Errorf("no events counted as success: %s", got)
	}
}

func TestCaptureKeepsHeadAndTail(t *testing.T) {
	var c capture
	c.add("FIRST")
	c.add(strings.Repeat("x", keepHead+keepTail+100))
	c.add("LAST")
	s := c.String()
	if !strings.HasPrefix(s, "FIRST") || !strings.HasSuffix(s, "LAST") || !strings.Contains(s, "bytes of this test's output left out") {
		t.Errorf("head %q… tail …%q", s[:20], s[len(s)-20:])
	}
	if len(s) > keepHead+keepTail+200 {
		t.Errorf("kept %d bytes", len(s))
	}
}
