package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// event is one line of test2json's output (`go doc test2json`).
type event struct {
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string // build-output and build-fail events
}

// A failed test's output is kept up to these many bytes from its start and from its end.
const (
	keepHead = 256 << 10
	keepTail = 1 << 20
)

// capture is one top-level test's output (its subtests' included), capped.
type capture struct {
	head    strings.Builder
	tail    []byte
	dropped int
}

func (c *capture) add(s string) {
	if c.head.Len() < keepHead {
		n := min(len(s), keepHead-c.head.Len())
		c.head.WriteString(s[:n])
		s = s[n:]
	}
	c.tail = append(c.tail, s...)
	if over := len(c.tail) - keepTail; over > 0 {
		c.dropped += over
		c.tail = append(c.tail[:0], c.tail[over:]...)
	}
}

func (c *capture) String() string {
	if c.dropped == 0 {
		return c.head.String() + string(c.tail)
	}
	return fmt.Sprintf("%s\n… %d bytes of this test's output left out …\n%s", c.head.String(), c.dropped, c.tail)
}

type timing struct {
	pkg, test, result string
	elapsed           time.Duration
}

type report struct {
	out      io.Writer
	running  map[string]*capture // package + "\x00" + top-level test
	timings  []timing
	results  int // package results seen
	failed   bool
	building map[string]*strings.Builder // a package's build output, printed when it fails
}

func newReport(out io.Writer) *report {
	return &report{out: out, running: map[string]*capture{}, building: map[string]*strings.Builder{}}
}

// topLevel is the test a subtest belongs to.
func topLevel(test string) string {
	name, _, _ := strings.Cut(test, "/")
	return name
}

// read consumes the events; false when something failed or nothing ran.
func (r *report) read(in io.Reader) bool {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(r.out, "%s\n", line) // not an event: go's own message
			continue
		}
		r.handle(e)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(r.out, "testreport: reading the events: %v\n", err)
		r.failed = true
	}
	if r.results == 0 {
		fmt.Fprintln(r.out, "testreport: no package result in the input: the tests did not run")
		r.failed = true
	}
	return !r.failed
}

func (r *report) handle(e event) {
	switch e.Action {
	case "build-output":
		b := r.building[e.ImportPath]
		if b == nil {
			b = &strings.Builder{}
			r.building[e.ImportPath] = b
		}
		b.WriteString(e.Output)
		return
	case "build-fail":
		fmt.Fprint(r.out, r.building[e.ImportPath])
		r.failed = true
		return
	}
	if e.Test == "" {
		r.packageEvent(e)
		return
	}
	key := e.Package + "\x00" + topLevel(e.Test)
	c := r.running[key]
	if c == nil {
		c = &capture{}
		r.running[key] = c
	}
	switch e.Action {
	case "output":
		c.add(e.Output)
	case "pass", "fail", "skip":
		if e.Test != topLevel(e.Test) {
			return
		}
		r.timings = append(r.timings, timing{pkg: e.Package, test: e.Test, result: e.Action, elapsed: seconds(e.Elapsed)})
		if e.Action == "fail" {
			fmt.Fprint(r.out, c)
		}
		delete(r.running, key)
	}
}

// packageEvent prints what go test prints for the package itself ("ok", "FAIL", output from
// outside any test); when it failed, the output of the tests it was still running (a timeout).
func (r *report) packageEvent(e event) {
	switch e.Action {
	case "output":
		if e.Output != "PASS\n" { // -json implies -v, which adds this line before "ok"
			fmt.Fprint(r.out, e.Output)
		}
	case "pass", "skip":
		r.results++
	case "fail":
		r.results++
		r.failed = true
		var names []string
		for key := range r.running {
			if pkg, _, _ := strings.Cut(key, "\x00"); pkg == e.Package {
				names = append(names, key)
			}
		}
		sort.Strings(names)
		for _, key := range names {
			_, test, _ := strings.Cut(key, "\x00")
			fmt.Fprintf(r.out, "=== %s was still running when %s ended; its output:\n%s", test, e.Package, r.running[key])
			delete(r.running, key)
		}
	}
}

// slowest lists the n slowest top-level tests.
func (r *report) slowest(n int) {
	if n <= 0 || len(r.timings) == 0 {
		return
	}
	sort.SliceStable(r.timings, func(i, j int) bool { return r.timings[i].elapsed > r.timings[j].elapsed })
	n = min(n, len(r.timings))
	fmt.Fprintf(r.out, "==> the %d slowest of %d tests:\n", n, len(r.timings))
	for _, t := range r.timings[:n] {
		fmt.Fprintf(r.out, "    %8.1f s  %-4s  %s  %s\n", t.elapsed.Seconds(), t.result, t.test, t.pkg)
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
