package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

// The built-in search (for guests without git) gives git grep's output format.
func TestGrepEnginesAgree(t *testing.T) {
	forEachRunner(t, testGrepEnginesAgree)
}

func testGrepEnginesAgree(t *testing.T, rn *testRunner) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "tests", "deep"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "tests", "mcp.bats"), []byte("# bulb 💡\n  tools_call 💡\nnothing\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "tests", "deep", "a.js"), []byte("x\n💡 js\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "bin.dat"), []byte("💡\x00binary"), 0o644))
	for _, tc := range []struct{ pattern, include, want string }{
		{"💡", "", "tests/deep/a.js:2:💡 js\ntests/mcp.bats:1:# bulb 💡\ntests/mcp.bats:2:  tools_call 💡\n"},
		{"💡", "*.js", "tests/deep/a.js:2:💡 js\n"},
		{"tools_call\\s+💡", "", "tests/mcp.bats:2:  tools_call 💡\n"},
		{"absent", "", ""},
	} {
		for _, noGit := range []bool{false, true} {
			r := rn.grep(t, &runnerproto.GrepRequest{Dir: dir, Pattern: tc.pattern, Include: tc.include, MaxBytes: 1 << 20, NoGit: noGit})
			if r.Error != "" || r.Output != tc.want {
				t.Errorf("%s %q include %q: got %q (error %q), want %q", r.Engine, tc.pattern, tc.include, r.Output, r.Error, tc.want)
			}
		}
	}
	for _, noGit := range []bool{false, true} {
		r := rn.grep(t, &runnerproto.GrepRequest{Dir: dir, Pattern: "foo(", MaxBytes: 1 << 20, NoGit: noGit})
		if !r.BadPattern {
			t.Errorf("%s: invalid pattern not reported: %+v", r.Engine, r)
		}
		r = rn.grep(t, &runnerproto.GrepRequest{Dir: dir, Pattern: "💡", MaxBytes: 40, NoGit: noGit})
		if !r.Truncated || r.Output != "tests/deep/a.js:2:💡 js\n" {
			t.Errorf("%s: limit: %+v", r.Engine, r)
		}
	}
}
