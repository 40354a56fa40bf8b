// Command testreport reads `go test -json` on its standard input and prints what `go test`
// without -v would (each package's result line, the whole output of a test that failed, a
// build failure), then the slowest tests, so that a CI log says where its time went.
//
//	go test -json ./... | go run ./hack/testreport [-top N] [-json FILE]
//
// It exits 1 when a test or a package failed, or when the input holds no result at all (a
// `go test` that never ran); hack/test.sh keeps go test's own exit status as well, with
// pipefail. gotestsum does this and more, but is one more tool to install on every CI machine
// for twenty lines of summary; test2json's event format is documented in `go doc test2json`.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	top := flag.Int("top", 25, "how many of the slowest tests to list")
	save := flag.String("json", "", "also write the events, as read, to this file")
	flag.Parse()
	in := io.Reader(os.Stdin)
	if *save != "" {
		f, err := os.Create(*save)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		defer f.Close()
		in = io.TeeReader(os.Stdin, f)
	}
	out := bufio.NewWriter(os.Stdout)
	r := newReport(out)
	ok := r.read(in)
	r.slowest(*top)
	out.Flush()
	if !ok {
		os.Exit(1)
	}
}
