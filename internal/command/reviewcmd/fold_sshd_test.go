package reviewcmd_test

import (
	"strings"
	"testing"

	"github.com/limactl-mcp/limactl-mcp/internal/command/reviewcmd"
	"github.com/limactl-mcp/limactl-mcp/internal/review"
	"github.com/limactl-mcp/limactl-mcp/internal/testutil/sessiontest"
)

// On a host directory that does not tell case apart (the probe's answer forced): --yes applies
// a rename that only changes case as a rename, and leaves both names of a collision pending,
// listed; naming one of them (`review readme.md --yes`) takes it, and the other stays
// pending. --json says both.
func TestReviewYesFoldedNames(t *testing.T) {
	old := review.ProbeNameRule
	review.ProbeNameRule = func(string) review.NameRule { return review.NameRule{FoldCase: true, Normalize: true} }
	t.Cleanup(func() { review.ProbeNameRule = old })
	f := sessiontest.New(t, map[string]string{"a.txt": "a\n", "keep.txt": "keep\n"})
	f.Guest("echo A > README.md && echo a > readme.md && mv keep.txt KEEP.txt")

	r := run(t, f, reviewcmd.Options{JSON: true}, false)
	wantLines(t, "--json", r.out, `"path": "KEEP.txt",`, `"renamed_from": "keep.txt"`, `"collides_with": [`+"\n        \"readme.md\"", `"collides_with": [`+"\n        \"README.md\"")
	if strings.Contains(r.out, `"path": "keep.txt"`) {
		t.Errorf("--json lists keep.txt apart from its rename:\n%s", r.out)
	}

	r = run(t, f, reviewcmd.Options{Yes: true}, false)
	if r.err != nil {
		t.Fatalf("--yes: %v\n%s%s", r.err, r.out, r.errOut)
	}
	wantLines(t, "--yes", r.out, "wrote   keep.txt", "wrote   KEEP.txt",
		"collision (not applied): README.md — one name with readme.md on this host directory",
		"collision (not applied): readme.md — one name with README.md on this host directory")
	if k, K, a, b := f.ReadHost("keep.txt"), f.ReadHost("KEEP.txt"), f.ReadHost("README.md"), f.ReadHost("readme.md"); k != "<missing>" || K != "keep\n" || a != "<missing>" || b != "<missing>" {
		t.Errorf("after --yes: keep.txt %q, KEEP.txt %q, README.md %q, readme.md %q", k, K, a, b)
	}

	r = run(t, f, reviewcmd.Options{Yes: true, Paths: []string{f.Workdir + "/readme.md"}}, false)
	if r.err != nil {
		t.Fatalf("--yes readme.md: %v\n%s%s", r.err, r.out, r.errOut)
	}
	wantLines(t, "--yes readme.md", r.out, "wrote   readme.md", "collision (not applied): README.md")
	if a, b := f.ReadHost("README.md"), f.ReadHost("readme.md"); a != "<missing>" || b != "a\n" {
		t.Errorf("after --yes readme.md: README.md %q, readme.md %q", a, b)
	}

	// README.md is still pending, a collision with the host's readme.md now: --yes leaves it.
	r = run(t, f, reviewcmd.Options{Yes: true}, false)
	wantLines(t, "--yes again", r.out, "collision (not applied): README.md — one name with readme.md")
	if a, b := f.ReadHost("README.md"), f.ReadHost("readme.md"); a != "<missing>" || b != "a\n" {
		t.Errorf("after --yes again: README.md %q, readme.md %q", a, b)
	}
}
