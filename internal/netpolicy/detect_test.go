package netpolicy

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDetectPresets(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"go.mod", "yarn.lock", "pyproject.toml", "x.gemspec", "build.gradle.kts", "README.md"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A file below the top proposes nothing.
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "Cargo.toml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	found := DetectPresets(dir)
	if got := ProposedPolicy(found); got != "allow:@go,@npm,@pypi,@rubygems,@maven" {
		t.Errorf("proposed %q (%+v)", got, found)
	}
	if found[1].File != "yarn.lock" || found[3].File != "x.gemspec" {
		t.Errorf("files: %+v", found)
	}
	if _, err := Parse(ProposedPolicy(found)); err != nil {
		t.Errorf("the proposal does not parse: %v", err)
	}
	if DetectPresets(t.TempDir()) != nil || ProposedPolicy(nil) != "" {
		t.Error("an empty project proposes something")
	}
	// Every preset of the table exists.
	for _, row := range detectTable {
		if _, ok := presetHosts(row.Preset); !ok {
			t.Errorf("the detection table names %q, not a preset", row.Preset)
		}
	}
}
