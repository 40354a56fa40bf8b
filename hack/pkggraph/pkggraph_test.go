package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The drawing in docs/architecture.md is what `go list` says today.
func TestDrawingIsCurrent(t *testing.T) {
	g, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Current(string(doc))
	if err != nil {
		t.Fatalf("docs/architecture.md: %v", err)
	}
	if want := g.Section(); got != want {
		t.Fatalf("docs/architecture.md's package drawing is not what the code's imports say: run `go generate ./hack/pkggraph` and commit the result")
	}
	// What the drawing must show at least: both binaries, and the split the layers rely on.
	for _, p := range []string{"cmd/limactl-mcp", "cmd/limactl-mcp-runner", "internal/netpolicy", "internal/netpolicy/enforce", "internal/tree"} {
		if _, ok := g.Floor[p]; !ok {
			t.Errorf("%s is not drawn", p)
		}
	}
	if by := strings.Join(g.LinkedBy["internal/netpolicy/enforce"], ","); by != "runner" {
		t.Errorf("internal/netpolicy/enforce is linked by %q, want the runner alone", by)
	}
}

func TestFloorsAndReduction(t *testing.T) {
	g := &Graph{Imports: map[string][]string{
		"cmd/a":  {"lib/b", "lib/c"},
		"lib/b":  {"lib/c"},
		"lib/c":  nil,
		"cmd/d":  {"lib/c"},
		"lib/e":  nil,
		"cmd/ab": {"cmd/a"},
	}, LinkedBy: map[string][]string{}, Floor: map[string]int{}}
	for p := range g.Imports {
		if _, err := g.floor(p, map[string]bool{}); err != nil {
			t.Fatal(err)
		}
	}
	for p, want := range map[string]int{"lib/c": 0, "lib/e": 0, "lib/b": 1, "cmd/d": 1, "cmd/a": 2, "cmd/ab": 3} {
		if g.Floor[p] != want {
			t.Errorf("floor of %s = %d, want %d", p, g.Floor[p], want)
		}
	}
	if d := strings.Join(g.drawn("cmd/a"), " "); d != "lib/b" {
		t.Errorf("cmd/a is drawn to %q, want lib/b alone (lib/c comes through it)", d)
	}
	s := g.Section()
	if !strings.Contains(s, "| 2 | `cmd/a` |  | `lib/b`, `lib/c` |") || !strings.Contains(s, "cmd_a --> lib_b\n") || strings.Contains(s, "cmd_a --> lib_c") {
		t.Errorf("section:\n%s", s)
	}

	cyc := &Graph{Imports: map[string][]string{"x": {"y"}, "y": {"x"}}, Floor: map[string]int{}}
	if _, err := cyc.floor("x", map[string]bool{}); err == nil {
		t.Error("a cycle gave no error")
	}
}

func TestReplace(t *testing.T) {
	doc := "# T\n\n" + Begin + "\nold\n" + End + "\n\n## Next\n"
	out, err := Replace(doc, Begin+"\nnew\n"+End+"\n")
	if err != nil || out != "# T\n\n"+Begin+"\nnew\n"+End+"\n\n## Next\n" {
		t.Fatalf("Replace = %q, %v", out, err)
	}
	if cur, err := Current(out); err != nil || cur != Begin+"\nnew\n"+End+"\n" {
		t.Fatalf("Current = %q, %v", cur, err)
	}
	for _, bad := range []string{"# no markers\n", End + "\n" + Begin + "\n", doc + doc} {
		if _, err := Replace(bad, "x"); err == nil {
			t.Errorf("Replace(%q) gave no error", bad)
		}
	}
}
