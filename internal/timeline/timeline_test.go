package timeline

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const knownSecret = "sk-test-7f3a9c1e5b2d4680"

func TestRecordSummarisesAndRedacts(t *testing.T) {
	dir := t.TempDir()
	red := FromEnviron([]string{"HOME=/home/someone", "MY_API_TOKEN=" + knownSecret, "PATH=/usr/bin:/bin"})
	l := Open(dir, "serve", red)
	content := strings.Repeat("the file's secret content line\n", 100)
	raw, _ := json.Marshal(map[string]any{"path": "/w/a.txt", "content": content, "note": "key is " + knownSecret})
	l.Record(Event{Kind: Call, Tool: "write_file", Args: Summarise(raw, red), Command: "curl -H 'Authorization: " + knownSecret + "'", Error: "failed with " + knownSecret})
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{knownSecret, "secret content line", "/home/someone" + "x"} {
		if strings.Contains(string(data), bad) {
			t.Errorf("the timeline holds %q:\n%s", bad, data)
		}
	}
	tl, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Events) != 1 {
		t.Fatalf("events: %d", len(tl.Events))
	}
	e := tl.Events[0]
	c, _ := e.Args["content"].(map[string]any)
	if c == nil || c["bytes"] != float64(len(content)) || c["lines"] != float64(100) {
		t.Errorf("content not summarised: %#v", e.Args["content"])
	}
	if e.Args["note"] != "key is "+Redacted || !strings.Contains(e.Command, Redacted) || !strings.Contains(e.Error, Redacted) {
		t.Errorf("not redacted: %+v", e)
	}
	if e.Source != "serve" || e.PID != os.Getpid() || e.Time.IsZero() {
		t.Errorf("defaults not filled: %+v", e)
	}
}

func TestLongStringsAndHugeEventsAreCut(t *testing.T) {
	dir := t.TempDir()
	l := Open(dir, "serve", nil)
	long := strings.Repeat("x", 100_000)
	raw, _ := json.Marshal(map[string]any{"pattern": long, "command": []string{"sh", "-c", long}})
	args := Summarise(raw, nil)
	if s, ok := args["pattern"].(map[string]any); !ok || s["bytes"] != 100_000 {
		t.Errorf("pattern: %#v", args["pattern"])
	}
	many := make([]string, 500)
	for i := range many {
		many[i] = fmt.Sprintf("path/number/%d/with/a/long/name/to/fill/the/line.txt", i)
	}
	l.Record(Event{Kind: Apply, Paths: many, Args: args})
	tl, err := Read(dir)
	if err != nil || len(tl.Events) != 1 {
		t.Fatalf("%v %d", err, len(tl.Events))
	}
	e := tl.Events[0]
	if len(e.Paths) != 50 || e.Note == "" || e.Args["cut"] != true {
		t.Errorf("a huge event is not cut: %d paths, note %q, args %v", len(e.Paths), e.Note, e.Args)
	}
	data, _ := os.ReadFile(filepath.Join(dir, FileName))
	if len(data) > MaxLineBytes {
		t.Errorf("line of %d bytes", len(data))
	}
}

func TestRotationKeepsTotals(t *testing.T) {
	dir := t.TempDir()
	l := Open(dir, "serve", nil)
	l.MaxBytes = 4096
	const n = 2000
	exit1 := 1
	for i := range n {
		e := Event{Kind: Call, Tool: "run_shell_command", Command: fmt.Sprintf("echo %d", i), DurationMS: 2}
		if i%10 == 0 {
			e.Exit = &exit1
		}
		l.Record(e)
	}
	tl, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Counts.Events != n || tl.Counts.Calls != n || tl.Counts.Commands != n || tl.Counts.Failures != n/10 || tl.Counts.BusyMS != 2*n {
		t.Errorf("totals: %+v", tl.Counts)
	}
	if len(tl.Events) >= n || tl.Dropped.Events == 0 || tl.Dropped.Events+len(tl.Events) != n {
		t.Errorf("held %d, dropped %d", len(tl.Events), tl.Dropped.Events)
	}
	// The files stay within about two generations.
	var size int64
	for _, name := range []string{FileName, OldName} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		size += fi.Size()
	}
	if size > 3*4096 {
		t.Errorf("the files hold %d bytes", size)
	}
	// The last event is the newest.
	if last := tl.Events[len(tl.Events)-1]; last.Command != fmt.Sprintf("echo %d", n-1) {
		t.Errorf("last: %q", last.Command)
	}
}

// A rotation killed after it counted the old generation and before it removed it leaves the
// old generation and totals that count it: read, it is counted once.
func TestInterruptedRotationCountsOnce(t *testing.T) {
	dir := t.TempDir()
	l := Open(dir, "serve", nil)
	for range 5 {
		l.Record(Event{Kind: Call, Tool: "read_file"})
	}
	if err := os.Rename(filepath.Join(dir, FileName), filepath.Join(dir, OldName)); err != nil {
		t.Fatal(err)
	}
	c, last, err := countFile(filepath.Join(dir, OldName))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(Totals{Dropped: c, Generations: 1, LastDropped: last})
	if err := os.WriteFile(filepath.Join(dir, TotalsName), data, 0o600); err != nil {
		t.Fatal(err)
	}
	l.Record(Event{Kind: Call, Tool: "glob"})
	tl, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Counts.Calls != 6 || len(tl.Events) != 6 {
		t.Errorf("calls %d, events %d (want 6, 6)", tl.Counts.Calls, len(tl.Events))
	}
	// The next rotation does not count it again either.
	l.MaxBytes = 1
	l.Record(Event{Kind: Call, Tool: "glob"})
	tl, err = Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Counts.Calls != 7 {
		t.Errorf("after a rotation: calls %d (want 7)", tl.Counts.Calls)
	}
}

// Several processes append to one timeline (serve, shell, review): each line stays whole.
func TestConcurrentWritersKeepLinesWhole(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	const writers, each = 4, 300
	for w := range writers {
		l := Open(dir, fmt.Sprintf("w%d", w), nil)
		l.MaxBytes = 32 << 10
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				l.Record(Event{Kind: Command, Command: strings.Repeat("y", i%700)})
			}
		}()
	}
	wg.Wait()
	tl, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Bad != 0 || tl.Counts.Commands != writers*each {
		t.Errorf("bad lines %d, commands %d (want 0, %d)", tl.Bad, tl.Counts.Commands, writers*each)
	}
}

// A process killed in the middle of a write leaves a torn last line: it is not an event, and
// every event before it reads.
func TestTornLastLineIsSkipped(t *testing.T) {
	dir := t.TempDir()
	l := Open(dir, "serve", nil)
	l.Record(Event{Kind: Call, Tool: "glob"})
	f, err := os.OpenFile(filepath.Join(dir, FileName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"t":"2026-01-01T00:00:00Z","kind":"call","tool":"wri`)
	f.Close()
	tl, err := Read(dir)
	if err != nil || len(tl.Events) != 1 || tl.Events[0].Tool != "glob" {
		t.Fatalf("%v %+v", err, tl)
	}
	// The next event of another process starts on that line; it is lost with it, not the ones after.
	l.Record(Event{Kind: Call, Tool: "replace"})
	l.Record(Event{Kind: Call, Tool: "read_file"})
	tl, _ = Read(dir)
	if n := len(tl.Events); n != 2 || tl.Events[n-1].Tool != "read_file" || tl.Bad != 1 {
		t.Errorf("after a torn line: %d events, %d bad", n, tl.Bad)
	}
}

// A Follower's each look reads what was appended since the one before, across rotations.
func TestFollowerSeesNewEventsAndRotation(t *testing.T) {
	dir := t.TempDir()
	l := Open(dir, "serve", nil)
	l.Record(Event{Kind: Call, Tool: "first"})
	tl, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := tl.Follower(dir)
	look := func() string {
		t.Helper()
		var got []string
		if err := f.Read(func(e *Event) { got = append(got, e.Tool) }); err != nil {
			t.Fatal(err)
		}
		return strings.Join(got, " ")
	}
	if s := look(); s != "" {
		t.Fatalf("followed %q before anything was appended", s)
	}
	l.Record(Event{Kind: Call, Tool: "second"})
	if s := look(); s != "second" {
		t.Fatalf("followed %q", s)
	}
	l.MaxBytes = 1 // every event rotates: the file followed is renamed after each
	for _, tool := range []string{"third", "fourth", "fifth"} {
		l.Record(Event{Kind: Call, Tool: tool})
		if s := look(); s != tool {
			t.Fatalf("followed %q, want %q", s, tool)
		}
	}
}

func TestAttribution(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	zero, one := 0, 1
	events := []Event{
		{Time: at(0), Kind: Call, Tool: "write_file", Paths: []string{"a.txt"}, DurationMS: 100},
		{Time: at(60), Kind: Call, Tool: "run_shell_command", Command: "npm install", DurationMS: 41_000, Exit: &zero},
		// two concurrent commands
		{Time: at(200), Kind: Call, Tool: "run_shell_command", Command: "make a", DurationMS: 10_000, Exit: &zero, PID: 7},
		{Time: at(203), Kind: Command, Command: "make b", DurationMS: 10_000, Exit: &one, PID: 8},
		// a background process, seen ended at 400
		{Time: at(300), Kind: BackgroundStart, Command: "watch", Background: 1, PID: 7},
		{Time: at(400), Kind: BackgroundExit, Background: 1, PID: 7},
		{Time: at(500), Kind: Call, Tool: "replace", Paths: []string{"b.txt"}, DurationMS: 50},
	}
	changes := []Change{
		{Path: "a.txt", MTime: at(80)},     // write_file, then npm install
		{Path: "b.txt", MTime: at(500)},    // replace only
		{Path: "c.txt", MTime: at(205)},    // one of make a, make b
		{Path: "d.txt", MTime: at(350)},    // the background process
		{Path: "e.txt", MTime: at(1000)},   // outside every call
		{Path: "f.txt", Deleted: true},     // no time: any command
		{Path: "a2.txt", MTime: at(0)},     // written at write_file's time but not named: no write_file
		{Path: "lock", MTime: at(101 - 1)}, // npm install
	}
	p := Attribute(events, changes, at(2000))
	check := func(path string, named, changed int, ambiguous bool, line string) {
		t.Helper()
		got := p[path]
		if len(got.Named) != named || len(got.ChangedBy) != changed || got.Ambiguous != ambiguous {
			t.Errorf("%s: named %d, changed by %d, ambiguous %v: %+v", path, len(got.Named), len(got.ChangedBy), got.Ambiguous, got)
		}
		if l := got.Line(path == "f.txt"); !strings.Contains(l, line) {
			t.Errorf("%s: line %q does not say %q", path, l, line)
		}
	}
	check("a.txt", 1, 1, false, "then modified by `npm install` (exit 0, 41 s)")
	check("b.txt", 1, 1, false, "written by replace")
	check("c.txt", 0, 2, true, "modified by one of these 2 calls: `make a`")
	check("d.txt", 0, 1, false, "background process 1 `watch`")
	check("e.txt", 0, 0, false, "outside every recorded call")
	check("f.txt", 0, 4, true, "deleted by one of these 4 calls")
	check("a2.txt", 0, 0, false, "outside every recorded call")
	check("lock", 0, 1, false, "modified by `npm install`")
	if !strings.HasPrefix(p["a.txt"].Line(false), "written by write_file at ") {
		t.Errorf("a.txt: %q", p["a.txt"].Line(false))
	}
}

// jsonStringSize counts what encoding/json decodes, for every kind of escape.
func TestJSONStringSize(t *testing.T) {
	cases := []string{"", "plain", "a\nb\n", "quote \" and \\ back", "tab\tctl\x01\x1f", "é ü 日本 🙂 \u2028", "<html>&amp;</html>", strings.Repeat("line\n", 1000)}
	raws := []string{`"\ud83d\ude42"`, `"\ud83d"`, `"\ude42x"`, `"\u00e9\u0041\/"`}
	for _, c := range cases {
		b, _ := json.Marshal(c)
		raws = append(raws, string(b))
	}
	for _, raw := range raws {
		var s string
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			t.Fatal(err)
		}
		n, lines := jsonStringSize([]byte(raw))
		if n != len(s) || lines != strings.Count(s, "\n") {
			t.Errorf("%s: size %d lines %d, want %d %d", raw, n, lines, len(s), strings.Count(s, "\n"))
		}
	}
}

// A session directory removed and made again (discard, then a new session of that name) has a
// new lock file: a serve that wrote before locks the new one at its next event, so that it and
// the new session's writers exclude each other again.
func TestLockFollowsSessionDirectoryMadeAgain(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "session")
	old := Open(dir, "serve", nil)
	old.Record(Event{Kind: Command, Command: "before"})
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	fresh := Open(dir, "shell", nil)
	fresh.Record(Event{Kind: Command, Command: "new session"})
	old.Record(Event{Kind: Command, Command: "after"})
	for name, l := range map[string]*Log{"the earlier writer": old, "the new one": fresh} {
		if l.lock == nil || !l.lockIsCurrent(l.lock) {
			t.Errorf("%s holds a lock file that is no longer the session's", name)
		}
	}
	tl, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Counts.Commands != 2 {
		t.Errorf("%d commands in the new timeline, want 2 (the new session's and the later one)", tl.Counts.Commands)
	}
}
