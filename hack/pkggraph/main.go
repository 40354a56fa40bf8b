// Command pkggraph draws this module's packages by floor, from `go list`, into the generated
// section of docs/architecture.md, so that the drawing cannot drift from the code:
// TestDrawingIsCurrent fails when the committed section differs from what this writes.
//
//	go generate ./hack/pkggraph     (rewrites the section)
//	go run ./hack/pkggraph          (prints it)
//
// The packages drawn are those the two binaries are built from (cmd/limactl-mcp, the host's,
// and cmd/limactl-mcp-runner, the guest's), as built for linux/amd64. A package's floor is one
// above the highest floor it imports (floor 0 imports no package of this module), so every
// arrow points down.
package main

//go:generate go run . -w ../../docs/architecture.md

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	write := flag.String("w", "", "rewrite the generated section of this Markdown `file` instead of printing it")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: pkggraph [-w FILE]")
		os.Exit(2)
	}
	g, err := Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pkggraph:", err)
		os.Exit(1)
	}
	section := g.Section()
	if *write == "" {
		fmt.Print(section)
		return
	}
	doc, err := os.ReadFile(*write)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pkggraph:", err)
		os.Exit(1)
	}
	out, err := Replace(string(doc), section)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pkggraph: %s: %v\n", *write, err)
		os.Exit(1)
	}
	if err := os.WriteFile(*write, []byte(out), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "pkggraph:", err)
		os.Exit(1)
	}
}
