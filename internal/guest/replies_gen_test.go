package guest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand"
	"path"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/guest/runnerclient"
	"github.com/limactl-mcp/limactl-mcp/internal/guest/sshlink"
	"github.com/limactl-mcp/limactl-mcp/internal/headtail"
	"github.com/limactl-mcp/limactl-mcp/internal/netpolicy"
	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/shellquote"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// A generator of runner replies: for every operation the host asks of the runner, a valid
// reply is taken apart field by field and each field is made missing, null, of every wrong
// type, huge (strings, arrays, numbers), negative, duplicated (both orders), deeply nested;
// each operation also has replies that contradict their request. Every shape goes through the
// real client (frames over a pipe, runnerclient.Client, Conn) and then through what the host does
// with an accepted reply (the consumers below do what staging, tools and the commands do with
// the fields). Nothing may panic or hang; a reply the host cannot use is a clear error.

// jv is a JSON value kept in order, so that a key can be written twice: jobj, jarr or jraw.
type jv any

type (
	jkv struct {
		k string
		v jv
	}
	jobj []jkv
	jarr []jv
	jraw string // JSON text of a scalar (or anything written as is)
)

func parseJV(t testing.TB, b []byte) jv {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var read func() jv
	read = func() jv {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		switch tok := tok.(type) {
		case json.Delim:
			if tok == '{' {
				o := jobj{}
				for dec.More() {
					k, _ := dec.Token()
					o = append(o, jkv{k.(string), read()})
				}
				dec.Token()
				return o
			}
			a := jarr{}
			for dec.More() {
				a = append(a, read())
			}
			dec.Token()
			return a
		case json.Number:
			return jraw(tok.String())
		case nil:
			return jraw("null")
		default:
			b, _ := json.Marshal(tok)
			return jraw(b)
		}
	}
	return read()
}

func writeJV(b *bytes.Buffer, v jv) {
	switch v := v.(type) {
	case jobj:
		b.WriteByte('{')
		for i, kv := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(kv.k)
			b.Write(k)
			b.WriteByte(':')
			writeJV(b, kv.v)
		}
		b.WriteByte('}')
	case jarr:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJV(b, e)
		}
		b.WriteByte(']')
	case jraw:
		b.WriteString(string(v))
	}
}

// step is a key (in an object) or an index (in an array).
type step struct {
	key string
	idx int // -1 for a key
}

func (s step) String() string {
	if s.idx >= 0 {
		return "[" + strconv.Itoa(s.idx) + "]"
	}
	return "." + s.key
}

func pathString(p []step) string {
	var b strings.Builder
	for _, s := range p {
		b.WriteString(s.String())
	}
	return b.String()
}

// nodes lists the paths of every value under v (the first element of each array only).
func nodes(v jv, prefix []step, out *[][]step) {
	switch v := v.(type) {
	case jobj:
		for _, kv := range v {
			p := append(append([]step(nil), prefix...), step{key: kv.k, idx: -1})
			*out = append(*out, p)
			nodes(kv.v, p, out)
		}
	case jarr:
		if len(v) > 0 {
			p := append(append([]step(nil), prefix...), step{idx: 0})
			*out = append(*out, p)
			nodes(v[0], p, out)
		}
	}
}

// mutation changes the value at a path: replaced, deleted, or written twice (the other value
// first or last).
type mutation struct {
	name    string
	del     bool
	dup     int // 1: the new value first, then the old; 2: the old first
	replace func(old jv) jv
}

// apply returns a copy of root with m applied at p.
func apply(root jv, p []step, m mutation) jv {
	s := p[0]
	switch v := root.(type) {
	case jobj:
		out := jobj{}
		for _, kv := range v {
			if kv.k != s.key {
				out = append(out, kv)
				continue
			}
			if len(p) > 1 {
				out = append(out, jkv{kv.k, apply(kv.v, p[1:], m)})
				continue
			}
			switch {
			case m.del:
			case m.dup == 1:
				out = append(out, jkv{kv.k, m.replace(kv.v)}, kv)
			case m.dup == 2:
				out = append(out, kv, jkv{kv.k, m.replace(kv.v)})
			default:
				out = append(out, jkv{kv.k, m.replace(kv.v)})
			}
		}
		return out
	case jarr:
		out := jarr{}
		for i, e := range v {
			if i != s.idx {
				out = append(out, e)
				continue
			}
			if len(p) > 1 {
				out = append(out, apply(e, p[1:], m))
				continue
			}
			switch {
			case m.del:
			case m.dup != 0:
				out = append(out, e, m.replace(e))
			default:
				out = append(out, m.replace(e))
			}
		}
		return out
	}
	return root
}

// escapeClasses is one string with every kind of terminal control and invisible character.
const escapeClasses = "\x1b]0;title\x07\x1b[2J\x1b[31m\x1b]52;c;cHduZWQ=\x07\x1b]8;;http://x\x1b\\\x1bP+q\x1b\\\x1b_a\x1b\\\x1b^p\x1b\\\x1bXs\x1b\\\u009b31m\u009d0;t\u009c\x1b\x07ab\b\b\rzz\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u200c\u200d\u2060\ufeff\u00ad\u2028\u2029"

func constant(s string) func(jv) jv { return func(jv) jv { return jraw(s) } }

func nested(depth int) jraw {
	return jraw(strings.Repeat("[", depth) + strings.Repeat("]", depth))
}

var hugeString = func() jraw { b, _ := json.Marshal(strings.Repeat("A", 1<<20)); return jraw(b) }()

var mutations = []mutation{
	{name: "missing", del: true},
	{name: "null", replace: constant("null")},
	{name: "string", replace: constant(`"x"`)},
	{name: "empty string", replace: constant(`""`)},
	{name: "bool", replace: constant("true")},
	{name: "number", replace: constant("7")},
	{name: "negative", replace: constant("-1")},
	{name: "fraction", replace: constant("1.5")},
	{name: "huge number", replace: constant("1e308")},
	{name: "max int64", replace: constant("9223372036854775807")},
	{name: "min int64", replace: constant("-9223372036854775808")},
	{name: "past uint64", replace: constant("18446744073709551616")},
	{name: "array", replace: constant("[]")},
	{name: "object", replace: constant("{}")},
	{name: "huge string", replace: func(jv) jv { return hugeString }},
	{name: "escape classes", replace: func(jv) jv { b, _ := json.Marshal(escapeClasses); return jraw(b) }},
	{name: "path out", replace: constant(`"../../etc/passwd"`)},
	{name: "huge array", replace: func(old jv) jv {
		var b bytes.Buffer
		writeJV(&b, old)
		if b.Len() > 256 {
			old = jraw("0") // 20000 copies of a large value would be a test of the machine
		}
		a := make(jarr, 20000)
		for i := range a {
			a[i] = old
		}
		return a
	}},
	{name: "nested", replace: func(jv) jv { return nested(200) }},
	{name: "nested past the decoder's limit", replace: func(jv) jv { return nested(10001) }},
	{name: "duplicated, other value first", dup: 1, replace: constant(`"x"`)},
	{name: "duplicated, other value last", dup: 2, replace: constant("-1")},
}

// replyOp is one operation of the runner, as the host calls it.
type replyOp struct {
	name string
	key  string // the reply's field
	// valid is a reply that fits the request call sends.
	valid any
	// contradictory are replies that contradict the request or themselves.
	contradictory map[string]any
	// call makes the host's call and does with an accepted reply what the host does.
	call func(ctx context.Context, c *Conn) error
	// req is the request call sends (for the fuzz target, which checks without a Conn).
	req *runnerproto.Request
}

const testHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

func status(id int) runnerproto.BgStatus {
	return runnerproto.BgStatus{ID: id, Argv: []string{"sleep", "9"}, Dir: "/r", PID: 77, Started: 1, Running: true, OutputBytes: 100}
}

func replyOps() []replyOp {
	out := func(s string) headtail.Output { return headtail.Output{Head: []byte(s), Total: int64(len(s))} }
	info := func(id, label string) runnerproto.CkptInfo {
		return runnerproto.CkptInfo{ID: id, Label: label, TimeMillis: 1700000000000, Files: 1, Dirs: 1, Bytes: 4, Stored: 4}
	}
	ckptTree := runnerproto.CkptTree{Session: "s", Root: "/r"}
	limits := runnerproto.CkptLimits{MaxEntries: 100, MaxStoreBytes: 1 << 20, MaxAuto: 2, MaxLabelled: 2}
	ended := status(4)
	ended.Running, ended.ExitCode, ended.Ended = false, 1, 2
	return []replyOp{
		{
			name: "exec", key: "exec",
			req:   &runnerproto.Request{Exec: &runnerproto.ExecRequest{Argv: []string{"true"}, Dir: "/r", TimeoutMillis: 1000, HeadBytes: 10, TailBytes: 10}},
			valid: runnerproto.ExecResult{Stdout: out("hi"), Stderr: out("e"), ExitCode: 1, HeldBy: []string{"pid 5 (sleep 9)"}, DurationMillis: 5},
			contradictory: map[string]any{
				"more output than asked":        runnerproto.ExecResult{Stdout: out(strings.Repeat("x", 11))},
				"a total below what it carries": runnerproto.ExecResult{Stdout: headtail.Output{Head: []byte("abc"), Total: 1}},
				"an exit status no process has": runnerproto.ExecResult{ExitCode: 300},
				"a negative duration":           runnerproto.ExecResult{DurationMillis: -5},
			},
			call: func(ctx context.Context, c *Conn) error {
				r, err := c.Exec(ctx, ExecRequest{Argv: []string{"true"}, Dir: "/r", Timeout: time.Second, HeadBytes: 10, TailBytes: 10})
				if err != nil {
					return err
				}
				cut := r.Stdout.Total - int64(len(r.Stdout.Head)) - int64(len(r.Stdout.Tail)) // tools' joinOutput
				_ = fmt.Sprintf("%s %d %s %s", r.Stdout.Head, cut, strings.Join(r.HeldBy, ", "), strings.TrimPrefix(r.Signal, "SIG"))
				return nil
			},
		},
		{
			name: "scan", key: "scan",
			req:   &runnerproto.Request{Scan: &runnerproto.ScanRequest{Root: "/r"}},
			valid: runnerproto.ScanResult{Entries: []tree.Entry{{Path: "a", Type: tree.File, Mode: 0o644, Size: 4, MTime: 5}, {Path: "d", Type: tree.Dir, Mode: 0o755}}, Also: []tree.Entry{{Path: ".git/HEAD", Type: tree.File, Mode: 0o644}}, Errors: []string{"d/x: permission denied"}},
			contradictory: map[string]any{
				"a path listed twice":       runnerproto.ScanResult{Entries: []tree.Entry{{Path: "a", Type: tree.File}, {Path: "a", Type: tree.File}}},
				"a path out of the tree":    runnerproto.ScanResult{Entries: []tree.Entry{{Path: "../a", Type: tree.File}}},
				"entries of a missing root": runnerproto.ScanResult{RootMissing: true, Entries: []tree.Entry{{Path: "a", Type: tree.File}}},
			},
			call: func(ctx context.Context, c *Conn) error {
				r, err := c.Scan(ctx, runnerproto.ScanRequest{Root: "/r"})
				if err != nil {
					return err
				}
				es := append([]tree.Entry(nil), r.Entries...)
				sort.Slice(es, func(i, j int) bool { return es[i].Path < es[j].Path })
				for _, e := range es {
					_ = fs.FileMode(e.Mode).String() + path.Dir(string(e.Path))
				}
				return nil
			},
		},
		{
			name: "hash", key: "hash",
			req:   &runnerproto.Request{Hash: &runnerproto.HashRequest{Root: "/r", Paths: []tree.Name{"a", "b"}}},
			valid: runnerproto.HashResult{Hashes: []string{testHash, ""}},
			contradictory: map[string]any{
				"fewer hashes than paths": runnerproto.HashResult{Hashes: []string{testHash}},
				"more hashes than paths":  runnerproto.HashResult{Hashes: []string{testHash, testHash, testHash}},
				"a hash that is no hash":  runnerproto.HashResult{Hashes: []string{"zz", ""}},
			},
			call: func(ctx context.Context, c *Conn) error {
				paths := []tree.Name{"a", "b"}
				hs, err := c.Hash(ctx, "/r", paths)
				if err != nil {
					return err
				}
				for i := range paths { // the host pairs them by index
					_ = hs[i]
				}
				return nil
			},
		},
		{
			name: "read many", key: "read_many",
			req:   &runnerproto.Request{ReadMany: &runnerproto.ReadManyRequest{Root: "/r", Paths: []tree.Name{"a", "b"}, Each: 4, Total: 6}},
			valid: runnerproto.ReadManyResult{Files: []runnerproto.ReadManyFile{{OK: true, Data: []byte("abc")}, {}}},
			contradictory: map[string]any{
				"fewer files than paths":      runnerproto.ReadManyResult{Files: []runnerproto.ReadManyFile{{OK: true}}},
				"more files than paths":       runnerproto.ReadManyResult{Files: []runnerproto.ReadManyFile{{}, {}, {}}},
				"a file over each":            runnerproto.ReadManyResult{Files: []runnerproto.ReadManyFile{{OK: true, Data: []byte("abcde")}, {}}},
				"files over total":            runnerproto.ReadManyResult{Files: []runnerproto.ReadManyFile{{OK: true, Data: []byte("abcd")}, {OK: true, Data: []byte("abcd")}}},
				"bytes of a file said unread": runnerproto.ReadManyResult{Files: []runnerproto.ReadManyFile{{Data: []byte("ab")}, {}}},
			},
			call: func(ctx context.Context, c *Conn) error {
				paths := []tree.Name{"a", "b"}
				ds, err := c.ReadMany(ctx, "/r", paths, 4, 6)
				if err != nil {
					return err
				}
				for i := range paths { // the host pairs them by index
					_ = ds[i]
				}
				return nil
			},
		},
		{
			name: "read", key: "read",
			req:   &runnerproto.Request{Read: &runnerproto.ReadRequest{Path: "/r/a", Limit: 4}},
			valid: runnerproto.ReadResult{Data: []byte("abc"), Size: 3},
			contradictory: map[string]any{
				"more than asked":             runnerproto.ReadResult{Data: []byte("abcdef"), Size: 6},
				"content of a directory":      runnerproto.ReadResult{Data: []byte("a"), NotRegular: tree.Dir},
				"content of a missing file":   runnerproto.ReadResult{Data: []byte("a"), Missing: true},
				"cut short with less":         runnerproto.ReadResult{Data: []byte("a"), Truncated: true},
				"a type outside the protocol": runnerproto.ReadResult{NotRegular: "fifo"},
			},
			call: func(ctx context.Context, c *Conn) error {
				data, err := c.ReadFile(ctx, "/r/a", 4)
				if err == nil && len(data) > 4 {
					return fmt.Errorf("%d bytes for 4", len(data))
				}
				return err
			},
		},
		{
			name: "list", key: "list",
			req:   &runnerproto.Request{List: &runnerproto.ListRequest{Dir: "/r", Max: 10}},
			valid: runnerproto.ListResult{Entries: []runnerproto.ListEntry{{Name: "a", Type: tree.File, Mode: 0o644, Size: 3, MTime: 5}, {Name: "l", Type: tree.Symlink, Mode: uint32(fs.ModeSymlink | 0o777), Target: "/r/a"}}},
			contradictory: map[string]any{
				"a name with a slash":             runnerproto.ListResult{Entries: []runnerproto.ListEntry{{Name: "a/b", Type: tree.File}}},
				"entries of what is no directory": runnerproto.ListResult{NotDir: true, Entries: []runnerproto.ListEntry{{Name: "a", Type: tree.File}}},
				"a link target of a file":         runnerproto.ListResult{Entries: []runnerproto.ListEntry{{Name: "a", Type: tree.File, Target: "/x"}}},
				"more entries than asked":         runnerproto.ListResult{Entries: make([]runnerproto.ListEntry, 11)},
			},
			call: func(ctx context.Context, c *Conn) error {
				r, err := c.List(ctx, "/r", 10)
				if err != nil {
					return err
				}
				sort.Slice(r.Entries, func(i, j int) bool { return r.Entries[i].Name < r.Entries[j].Name })
				for _, e := range r.Entries {
					_ = time.Unix(0, e.MTime).String() + fs.FileMode(e.Mode).String() + string(e.Target)
				}
				return nil
			},
		},
		{
			name: "glob", key: "glob",
			req:   &runnerproto.Request{Glob: &runnerproto.GlobRequest{Dir: "/r", Pattern: "*", MaxMatches: 10}},
			valid: runnerproto.GlobResult{Matches: []string{"/r/a", "/r/b"}},
			contradictory: map[string]any{
				"more matches than asked": runnerproto.GlobResult{Matches: []string{"/1", "/2", "/3", "/4", "/5", "/6", "/7", "/8", "/9", "/10", "/11"}},
				"a relative match":        runnerproto.GlobResult{Matches: []string{"a"}},
			},
			call: func(ctx context.Context, c *Conn) error {
				r, err := c.Glob(ctx, "/r", "*", 10)
				if err != nil {
					return err
				}
				for _, m := range r.Matches {
					_, _ = tree.Inside("/r", path.Clean(m))
				}
				return nil
			},
		},
		{
			name: "grep", key: "grep",
			req:   &runnerproto.Request{Grep: &runnerproto.GrepRequest{Dir: "/r", Pattern: "x", MaxBytes: 100}},
			valid: runnerproto.GrepResult{Output: "a:1:x\n", Engine: "git"},
			contradictory: map[string]any{
				"more output than asked": runnerproto.GrepResult{Output: strings.Repeat("x", 101)},
				"an unknown engine":      runnerproto.GrepResult{Engine: "sed"},
			},
			call: func(ctx context.Context, c *Conn) error {
				_, err := c.Grep(ctx, runnerproto.GrepRequest{Dir: "/r", Pattern: "x", MaxBytes: 100})
				return err
			},
		},
		{
			name: "write", key: "write",
			req:   &runnerproto.Request{Write: &runnerproto.WriteRequest{Path: "/r/a", Data: []byte("x"), Mode: 0o644}},
			valid: runnerproto.WriteResult{InPlace: true},
			contradictory: map[string]any{
				"a type outside the protocol": runnerproto.WriteResult{NotRegular: "symlink"},
				"an errno at length":          runnerproto.WriteResult{Errno: strings.Repeat("E", 17)},
			},
			call: func(ctx context.Context, c *Conn) error {
				return c.WriteFile(ctx, "/r/a", []byte("x"), 0o644, false)
			},
		},
		{
			name: "read following links", key: "read",
			req:   &runnerproto.Request{Read: &runnerproto.ReadRequest{Path: "/r/a", Limit: readChunk, Follow: true}},
			valid: runnerproto.ReadResult{Data: []byte("abc"), Size: 3, Mode: 0o644},
			contradictory: map[string]any{
				"content with an errno":        runnerproto.ReadResult{Data: []byte("a"), Errno: "EACCES"},
				"a link at the end, followed":  runnerproto.ReadResult{NotRegular: tree.Symlink},
				"an errno that is not a name":  runnerproto.ReadResult{Errno: "\x1b[2J"},
				"content of a fifo":            runnerproto.ReadResult{Data: []byte("a"), NotRegular: tree.Other, Mode: uint32(fs.ModeNamedPipe)},
				"cut short with nothing after": runnerproto.ReadResult{Data: []byte("a"), Truncated: true},
			},
			call: func(ctx context.Context, c *Conn) error {
				f, err := c.OpenFollowing(ctx, "/r/a")
				if err != nil {
					var nr *NotRegularError
					if errors.As(err, &nr) {
						_ = nr.Mode.Type().String() + string(nr.Kind)
					}
					return err
				}
				defer f.Close()
				data, err := io.ReadAll(io.LimitReader(f, 1<<20))
				if err == nil && int64(len(data)) > f.Size() && f.Size() >= 0 {
					_ = len(data)
				}
				return err
			},
		},
		{
			name: "edit", key: "edit",
			req:   &runnerproto.Request{Edit: &runnerproto.EditRequest{Path: "/r/a", Old: "a", New: "b", Count: 1, MaxBytes: 100}},
			valid: runnerproto.EditResult{Found: 1, Replaced: 1, Size: 3, Write: &runnerproto.WriteResult{InPlace: true}},
			contradictory: map[string]any{
				"more replaced than asked":    runnerproto.EditResult{Found: 2, Replaced: 2, Write: &runnerproto.WriteResult{}},
				"replaced without a write":    runnerproto.EditResult{Found: 1, Replaced: 1},
				"replaced, the write failed":  runnerproto.EditResult{Found: 1, Replaced: 1, Write: &runnerproto.WriteResult{Errno: "ENOSPC"}},
				"created with text to find":   runnerproto.EditResult{Created: true, Write: &runnerproto.WriteResult{}},
				"a type outside the protocol": runnerproto.EditResult{NotRegular: tree.Symlink},
				"a negative count":            runnerproto.EditResult{Found: -1},
				"a negative size":             runnerproto.EditResult{Size: -1, TooLarge: true},
				"an errno that is not a name": runnerproto.EditResult{Errno: "no such file"},
			},
			call: func(ctx context.Context, c *Conn) error {
				r, err := c.Edit(ctx, runnerproto.EditRequest{Path: "/r/a", Old: "a", New: "b", Count: 1, MaxBytes: 100})
				if err != nil {
					return err
				}
				_ = fmt.Sprintf("%d %d %d %s %v", r.Found, r.Replaced, r.Size, r.NotRegular, fs.FileMode(r.Mode).Type())
				return nil
			},
		},
		{
			name: "ckpt_create", key: "ckpt_create",
			req:   &runnerproto.Request{CkptCreate: &runnerproto.CkptCreateRequest{Tree: ckptTree, Label: "l", Limits: limits}},
			valid: runnerproto.CkptCreateResult{Checkpoint: ptrTo(info("3", "l")), Pruned: []string{"1"}, Skipped: []tree.Name{"sock"}, StoreBytes: 10, Reused: 1},
			contradictory: map[string]any{
				"taken and refused":         runnerproto.CkptCreateResult{Checkpoint: ptrTo(info("3", "l")), StoreFull: true},
				"neither taken nor refused": runnerproto.CkptCreateResult{},
				"another label":             runnerproto.CkptCreateResult{Checkpoint: ptrTo(info("3", "other"))},
				"an automatic one":          runnerproto.CkptCreateResult{Checkpoint: &runnerproto.CkptInfo{ID: "3", Label: "l", Auto: true}},
				"an id that is no id":       runnerproto.CkptCreateResult{Checkpoint: ptrTo(info("03", "l"))},
				"a pruned id that is no id": runnerproto.CkptCreateResult{Checkpoint: ptrTo(info("3", "l")), Pruned: []string{"../x"}},
				"a skipped path out of it":  runnerproto.CkptCreateResult{Checkpoint: ptrTo(info("3", "l")), Skipped: []tree.Name{"/etc"}},
				"a negative store":          runnerproto.CkptCreateResult{Checkpoint: ptrTo(info("3", "l")), StoreBytes: -1},
				"negative counts":           runnerproto.CkptCreateResult{Checkpoint: &runnerproto.CkptInfo{ID: "3", Label: "l", Files: -1}},
			},
			call: func(ctx context.Context, c *Conn) error {
				r, err := c.CkptCreate(ctx, runnerproto.CkptCreateRequest{Tree: ckptTree, Label: "l", Limits: limits})
				if err != nil {
					return err
				}
				// staging.Checkpoint, then the checkpoint tool.
				switch {
				case r.RootMissing, r.TooManyEntries, r.StoreFull:
					return nil
				case r.Checkpoint == nil:
					return fmt.Errorf("no checkpoint")
				}
				ci := *r.Checkpoint
				_, err = strconv.Atoi(ci.ID)
				return err
			},
		},
		{
			name: "ckpt_list", key: "ckpt_list",
			req:   &runnerproto.Request{CkptList: &runnerproto.CkptListRequest{Session: "s"}},
			valid: runnerproto.CkptListResult{Checkpoints: []runnerproto.CkptInfo{info("1", ""), info("2", "x")}, StoreBytes: 5},
			contradictory: map[string]any{
				"an id twice":       runnerproto.CkptListResult{Checkpoints: []runnerproto.CkptInfo{info("1", ""), info("1", "")}},
				"a label at length": runnerproto.CkptListResult{Checkpoints: []runnerproto.CkptInfo{info("1", strings.Repeat("x", 1024+1))}},
				"a negative store":  runnerproto.CkptListResult{StoreBytes: -1},
			},
			call: func(ctx context.Context, c *Conn) error {
				r, err := c.CkptList(ctx, "s")
				if err != nil {
					return err
				}
				for _, ci := range r.Checkpoints {
					if _, err := strconv.Atoi(ci.ID); err != nil {
						return err
					}
					_ = time.UnixMilli(ci.TimeMillis).Format(time.RFC3339)
				}
				return nil
			},
		},
		{
			name: "ckpt_restore", key: "ckpt_restore",
			req:   &runnerproto.Request{CkptRestore: &runnerproto.CkptRestoreRequest{Tree: ckptTree, ID: "1", MaxChanges: 10}},
			valid: runnerproto.CkptRestoreResult{Changes: []runnerproto.CkptChange{{Path: "a", Kind: runnerproto.CkptContent}}, Total: 3},
			contradictory: map[string]any{
				"changes to an unknown checkpoint": runnerproto.CkptRestoreResult{Unknown: true, Total: 2},
				"changes to a missing tree":        runnerproto.CkptRestoreResult{RootMissing: true, Changes: []runnerproto.CkptChange{{Path: "a", Kind: runnerproto.CkptContent}}, Total: 1},
				"fewer in all than listed":         runnerproto.CkptRestoreResult{Changes: []runnerproto.CkptChange{{Path: "a", Kind: runnerproto.CkptContent}}},
				"an unknown kind":                  runnerproto.CkptRestoreResult{Changes: []runnerproto.CkptChange{{Path: "a", Kind: "moved"}}, Total: 1},
			},
			call: func(ctx context.Context, c *Conn) error {
				r, err := c.CkptRestore(ctx, runnerproto.CkptRestoreRequest{Tree: ckptTree, ID: "1", MaxChanges: 10})
				if err != nil {
					return err
				}
				for _, ch := range r.Changes {
					_ = ch.Kind + string(ch.Path)
				}
				_ = r.Total - len(r.Changes)
				return nil
			},
		},
		{
			name: "ckpt_manifest", key: "ckpt_manifest",
			req:   &runnerproto.Request{CkptManifest: &runnerproto.CkptManifestRequest{Session: "s", ID: "2", MaxEntries: 100}},
			valid: runnerproto.CkptManifestResult{Checkpoint: ptrTo(info("2", "x")), Entries: []tree.Entry{{Path: "a", Type: tree.File, Mode: 0o644, Size: 4, Hash: testHash}, {Path: "l", Type: tree.Symlink, Mode: 0o777, Target: "a"}}, ObjectDir: "/home/u/.cache/limactl-mcp/checkpoints/s/objects"},
			contradictory: map[string]any{
				"no checkpoint":                   runnerproto.CkptManifestResult{Entries: []tree.Entry{}, ObjectDir: "/o"},
				"another checkpoint":              runnerproto.CkptManifestResult{Checkpoint: ptrTo(info("3", "")), ObjectDir: "/o"},
				"content of an unknown one":       runnerproto.CkptManifestResult{Unknown: true, Checkpoint: ptrTo(info("2", ""))},
				"objects nowhere":                 runnerproto.CkptManifestResult{Checkpoint: ptrTo(info("2", ""))},
				"objects in a relative directory": runnerproto.CkptManifestResult{Checkpoint: ptrTo(info("2", "")), ObjectDir: "../o"},
				"a file without a hash":           runnerproto.CkptManifestResult{Checkpoint: ptrTo(info("2", "")), ObjectDir: "/o", Entries: []tree.Entry{{Path: "a", Type: tree.File}}},
				"a path twice":                    runnerproto.CkptManifestResult{Checkpoint: ptrTo(info("2", "")), ObjectDir: "/o", Entries: []tree.Entry{{Path: "d", Type: tree.Dir}, {Path: "d", Type: tree.Dir}}},
			},
			call: func(ctx context.Context, c *Conn) error {
				m, err := c.CkptManifest(ctx, runnerproto.CkptManifestRequest{Session: "s", ID: "2", MaxEntries: 100})
				if err != nil {
					return err
				}
				if m.Unknown {
					return nil // staging: an unknown checkpoint
				}
				// staging.ChangesSince and review --since.
				_ = m.Checkpoint.TimeMillis / 1000
				cp := *m.Checkpoint
				if _, err := strconv.Atoi(cp.ID); err != nil {
					return err
				}
				for _, e := range m.Entries {
					_ = path.Join(m.ObjectDir, e.Hash)
				}
				return nil
			},
		},
		{
			name: "bg_start", key: "bg_start",
			req:   &runnerproto.Request{BgStart: &runnerproto.BgStartRequest{Group: "s/o", Argv: []string{"sleep", "9"}, Dir: "/r"}},
			valid: runnerproto.BgStartResult{ID: 1, PID: 77},
			contradictory: map[string]any{
				"started and too many":        runnerproto.BgStartResult{ID: 1, PID: 77, TooMany: true},
				"started and not started":     runnerproto.BgStartResult{ID: 1, PID: 77, StartError: "no"},
				"neither":                     runnerproto.BgStartResult{},
				"an id without a pid":         runnerproto.BgStartResult{ID: 1},
				"an exit status out of range": runnerproto.BgStartResult{StartError: "no", ExitCode: 1000},
			},
			call: func(ctx context.Context, c *Conn) error {
				r, err := c.BgStart(ctx, runnerproto.BgStartRequest{Group: "s/o", Argv: []string{"sleep", "9"}, Dir: "/r"})
				if err != nil {
					return err
				}
				_ = fmt.Sprintf("id %d pid %d %s", r.ID, r.PID, r.StartError)
				return nil
			},
		},
		{
			name: "bg_read", key: "bg_read",
			req:   &runnerproto.Request{BgRead: &runnerproto.BgReadRequest{Group: "s/o", ID: 3, Max: 10}},
			valid: runnerproto.BgReadResult{Data: []byte("abc"), Offset: 5, Next: 8, Status: status(3)},
			contradictory: map[string]any{
				"another process":          runnerproto.BgReadResult{Status: status(4)},
				"a next offset that lies":  runnerproto.BgReadResult{Data: []byte("abc"), Next: 9, Status: status(3)},
				"past what it wrote":       runnerproto.BgReadResult{Data: []byte("abc"), Offset: 100, Next: 103, Status: status(3)},
				"output of an unknown one": runnerproto.BgReadResult{Unknown: true, Data: []byte("abc"), Next: 3},
				"more than asked":          runnerproto.BgReadResult{Data: make([]byte, 11), Next: 11, Status: status(3)},
				"running and ended":        runnerproto.BgReadResult{Status: runnerproto.BgStatus{ID: 3, PID: 77, Running: true, ExitCode: 2}},
			},
			call: func(ctx context.Context, c *Conn) error {
				r, err := c.BgRead(ctx, runnerproto.BgReadRequest{Group: "s/o", ID: 3, Max: 10})
				if err != nil {
					return err
				}
				_ = r.Next < r.Status.OutputBytes
				_ = string(r.Data) + shellquote.JoinCommand(r.Status.Argv)
				return nil
			},
		},
		{
			name: "bg_list", key: "bg_list",
			req:   &runnerproto.Request{BgList: &runnerproto.BgListRequest{Group: "s/o", Max: 5}},
			valid: runnerproto.BgListResult{Processes: []runnerproto.BgStatus{status(3), ended}},
			contradictory: map[string]any{
				"an id twice":     runnerproto.BgListResult{Processes: []runnerproto.BgStatus{status(3), status(3)}},
				"more than asked": runnerproto.BgListResult{Processes: []runnerproto.BgStatus{status(1), status(2), status(3), status(4), status(5), status(6)}},
				"a pid of 0":      runnerproto.BgListResult{Processes: []runnerproto.BgStatus{{ID: 3}}},
			},
			call: func(ctx context.Context, c *Conn) error {
				r, err := c.BgList(ctx, runnerproto.BgListRequest{Group: "s/o", Max: 5})
				if err != nil {
					return err
				}
				for _, s := range r.Processes {
					_ = shellquote.JoinCommand(s.Argv) + s.Signal + time.UnixMilli(s.Started).String()
				}
				return nil
			},
		},
		{
			name: "shell_ports", key: "shell_ports",
			req:   &runnerproto.Request{ShellPorts: &runnerproto.ShellPortsRequest{Mark: "0123456789abcdef0123456789abcdef"}},
			valid: runnerproto.ShellPortsResult{Ports: []runnerproto.BgPort{{Port: 8000, Addr: "127.0.0.1"}, {Port: 5173, Addr: "::"}}},
			contradictory: map[string]any{
				"a port of 0":       runnerproto.ShellPortsResult{Ports: []runnerproto.BgPort{{Port: 0, Addr: "127.0.0.1"}}},
				"a port past 65535": runnerproto.ShellPortsResult{Ports: []runnerproto.BgPort{{Port: 65536, Addr: "127.0.0.1"}}},
				"a host name":       runnerproto.ShellPortsResult{Ports: []runnerproto.BgPort{{Port: 80, Addr: "evil.example"}}},
				"an address zone":   runnerproto.ShellPortsResult{Ports: []runnerproto.BgPort{{Port: 80, Addr: "fe80::1%eth0"}}},
				"33 ports":          runnerproto.ShellPortsResult{Ports: make([]runnerproto.BgPort, runnerproto.MaxBgPorts+1)},
			},
			call: func(ctx context.Context, c *Conn) error {
				r, err := c.ShellPorts(ctx, runnerproto.ShellPortsRequest{Mark: "0123456789abcdef0123456789abcdef"})
				if err != nil {
					return err
				}
				for _, p := range r.Ports {
					_ = fmt.Sprintf("%s:%d", p.Addr, p.Port)
				}
				return nil
			},
		},
		{
			name: "bg_signal", key: "bg_signal",
			req:   &runnerproto.Request{BgSignal: &runnerproto.BgSignalRequest{Group: "s/o", ID: 4, Signal: "SIGTERM"}},
			valid: runnerproto.BgSignalResult{Killed: true, Status: ended},
			contradictory: map[string]any{
				"another process":    runnerproto.BgSignalResult{Status: status(3)},
				"a signal at length": runnerproto.BgSignalResult{Status: runnerproto.BgStatus{ID: 4, PID: 77, Signal: strings.Repeat("S", 17)}},
			},
			call: func(ctx context.Context, c *Conn) error {
				r, err := c.BgSignal(ctx, runnerproto.BgSignalRequest{Group: "s/o", ID: 4, Signal: "SIGTERM"})
				if err != nil {
					return err
				}
				_ = r.Status.Signal
				return nil
			},
		},
		{
			name: "bg_end", key: "bg_end",
			req:   &runnerproto.Request{BgEnd: &runnerproto.BgEndRequest{Group: "s", ListOnly: true}},
			valid: runnerproto.BgEndResult{Killed: 1, Removed: 1, Owners: []string{"123-ab"}},
			contradictory: map[string]any{
				"an owner that is a path": runnerproto.BgEndResult{Owners: []string{"../x"}},
				"negative counts":         runnerproto.BgEndResult{Killed: -1},
			},
			call: func(ctx context.Context, c *Conn) error {
				r, err := c.BgEnd(ctx, runnerproto.BgEndRequest{Group: "s", ListOnly: true})
				if err != nil {
					return err
				}
				_ = strings.Join(r.Owners, ",")
				return nil
			},
		},
	}
}

func ptrTo[T any](v T) *T { return &v }

// pipeConn is a Conn whose runner is fake, in this process: it answers each request with the
// frame reply(id) returns, through the real client (framing, checks, failure).
func pipeConn(t testing.TB, reply func(id uint64) []byte) *Conn {
	hostR, runnerW := io.Pipe()
	runnerR, hostW := io.Pipe()
	go func() {
		hello, _ := json.Marshal(runnerproto.Response{Hello: &runnerproto.Hello{Version: runnerproto.Version, PID: 5}})
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], uint32(len(hello)))
		if _, err := runnerW.Write(append(append([]byte(runnerproto.Magic), hdr[:]...), hello...)); err != nil {
			return
		}
		in := bufio.NewReader(runnerR)
		for {
			var req runnerproto.Request
			if err := runnerproto.ReadFrame(in, &req); err != nil {
				runnerR.Close()
				return
			}
			if req.Signal != nil {
				continue
			}
			body := reply(req.ID)
			binary.BigEndian.PutUint32(hdr[:], uint32(len(body)))
			if _, err := runnerW.Write(append(hdr[:], body...)); err != nil {
				return
			}
		}
	}()
	pipes := pipeStarter{&sshlink.Pipes{Stdin: hostW, Stdout: hostR, Stop: func() {
		hostW.Close()
		runnerW.Close()
	}}}
	r, err := runnerclient.Launch(context.Background(), pipes, slog.New(slog.DiscardHandler), "serve")
	if err != nil {
		t.Fatal(err)
	}
	c := New(func(context.Context) (*sshlink.Target, error) { return nil, fmt.Errorf("no guest in this test") }, Options{})
	c.cur = &link{t: noTransport{}, ops: runnerBackend{r}, done: make(chan struct{})}
	t.Cleanup(func() { c.Close() })
	return c
}

// pipeStarter starts nothing: its pipes are in this process.
type pipeStarter struct{ p *sshlink.Pipes }

func (s pipeStarter) Pipe(string, io.Writer) (*sshlink.Pipes, error) { return s.p, nil }

// noTransport is the transport of a link that has only a runner (pipeConn): closing it is
// all it does.
type noTransport struct{ sshlink.Transport }

func (noTransport) Close() {}

// frameWith is a reply frame: the id, then key with the JSON text body (body "" leaves key out).
func frameWith(id uint64, key string, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"id":%d`, id)
	if body != nil {
		fmt.Fprintf(&b, `,%q:`, key)
		b.Write(body)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// shapeResult runs one shape through the host: the call's error, or a panic as an error.
func shapeResult(t testing.TB, op replyOp, body []byte) (err error, panicked bool) {
	c := pipeConn(t, func(id uint64) []byte { return frameWith(id, op.key, body) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	func() {
		defer func() {
			if p := recover(); p != nil {
				panicked = true
				err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
			}
		}()
		err = op.call(ctx, c)
	}()
	if ctx.Err() != nil {
		t.Fatalf("%s: the call hung", op.name)
	}
	return err, panicked
}

func TestReplyGenerator(t *testing.T) {
	if testing.Short() {
		t.Skip("the reply generator runs thousands of shapes")
	}
	shapes, rejected := 0, 0
	run := func(op replyOp, what string, body []byte, mustReject bool) {
		shapes++
		err, panicked := shapeResult(t, op, body)
		switch {
		case panicked:
			t.Errorf("%s, %s: %v", op.name, what, err)
		case err != nil:
			rejected++
			if msg := err.Error(); strings.TrimSpace(msg) == "" {
				t.Errorf("%s, %s: an empty error", op.name, what)
			}
		case mustReject:
			t.Errorf("%s, %s: accepted", op.name, what)
		}
	}
	for _, op := range replyOps() {
		valid, err := json.Marshal(op.valid)
		if err != nil {
			t.Fatal(err)
		}
		// The valid reply is taken: otherwise the shapes prove nothing.
		if err, _ := shapeResult(t, op, valid); err != nil {
			t.Fatalf("%s: the valid reply was refused: %v", op.name, err)
		}
		// The reply's own field: missing, null, of every wrong type.
		for _, body := range []string{"", "null", `"x"`, "7", "true", "[]", `[{}]`, string(nested(10001))} {
			b := []byte(body)
			if body == "" {
				b = nil
			}
			run(op, "reply field "+strconv.Quote(body), b, true)
		}
		// Every field of it, every mutation.
		root := parseJV(t, valid)
		var paths [][]step
		nodes(root, nil, &paths)
		for _, p := range paths {
			for _, m := range mutations {
				var b bytes.Buffer
				writeJV(&b, apply(root, p, m))
				mustReject := op.name == "ckpt_manifest" && pathString(p) == ".checkpoint" && (m.del || m.name == "null")
				run(op, pathString(p)+" "+m.name, b.Bytes(), mustReject)
			}
		}
		// Replies that contradict the request or themselves.
		names := make([]string, 0, len(op.contradictory))
		for n := range op.contradictory {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			b, err := json.Marshal(op.contradictory[n])
			if err != nil {
				t.Fatal(err)
			}
			run(op, n, b, true)
		}
		// Seeded random shapes: several mutations at once.
		rnd := rand.New(rand.NewSource(int64(len(op.name))*7919 + 1))
		for range 150 {
			v := root
			for range 1 + rnd.Intn(4) {
				var ps [][]step
				nodes(v, nil, &ps)
				if len(ps) == 0 {
					break
				}
				v = apply(v, ps[rnd.Intn(len(ps))], mutations[rnd.Intn(len(mutations))])
			}
			var b bytes.Buffer
			writeJV(&b, v)
			run(op, "random", b.Bytes(), false)
		}
	}
	t.Logf("%d reply shapes through the host: %d refused with an error, %d taken; 0 panics, 0 hangs", shapes, rejected, shapes-rejected)
	helloShapes(t)
	setupShapes(t)
}

// helloShapes: the runner's first frame, every field mutated.
func helloShapes(t *testing.T) {
	valid, _ := json.Marshal(runnerproto.Hello{Version: runnerproto.Version, PID: 5, UID: 1000, Home: "/home/u", Shell: "/bin/sh", HasGit: true, LoginEnv: "cached"})
	root := parseJV(t, valid)
	var paths [][]step
	nodes(root, nil, &paths)
	n := 0
	try := func(body []byte) error {
		n++
		var b bytes.Buffer
		b.WriteString("junk from a login shell\n" + runnerproto.Magic)
		frame := frameWith(0, "hello", body)
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], uint32(len(frame)))
		b.Write(hdr[:])
		b.Write(frame)
		_, stdin := io.Pipe()
		_, err := runnerclient.Launch(context.Background(), pipeStarter{&sshlink.Pipes{Stdin: stdin, Stdout: &b, Stop: func() { stdin.Close() }}}, slog.New(slog.DiscardHandler), "serve")
		return err
	}
	if err := try(valid); err != nil {
		t.Fatalf("a valid hello: %v", err)
	}
	for _, body := range []string{"", "null", `"x"`, "[]"} {
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		if err := try(b); err == nil {
			t.Errorf("hello %q: accepted", body)
		}
	}
	for _, p := range paths {
		for _, m := range mutations {
			var b bytes.Buffer
			writeJV(&b, apply(root, p, m))
			err := try(b.Bytes())
			if pathString(p) == ".version" && err == nil && m.name != "duplicated, other value first" {
				t.Errorf("hello %s %s: accepted", pathString(p), m.name)
			}
		}
	}
	t.Logf("%d hello shapes: 0 panics", n)
}

// setupShapes: the line `net ensure` prints when the agent user is set up.
func setupShapes(t *testing.T) {
	a := &Agent{User: "lmcp-abc", Policy: "none"}
	valid, _ := json.Marshal(netpolicy.EnsureResult{User: "lmcp-abc", UID: 1001, Home: "/home/lmcp-abc", Policy: "none", EnvFile: "/etc/limactl-mcp/env/lmcp-abc", Log: "/var/log/limactl-mcp/lmcp-abc.log"})
	if _, err := a.parseSetup("noise\n" + string(valid) + "\n"); err != nil {
		t.Fatalf("a valid setup line: %v", err)
	}
	root := parseJV(t, valid)
	var paths [][]step
	nodes(root, nil, &paths)
	n := 0
	for _, p := range paths {
		for _, m := range mutations {
			var b bytes.Buffer
			writeJV(&b, apply(root, p, m))
			n++
			s, err := a.parseSetup(b.String())
			if err == nil && (s.User != a.User || s.UID <= 0) {
				t.Errorf("setup %s %s: accepted %+v", pathString(p), m.name, s)
			}
		}
	}
	t.Logf("%d net ensure line shapes: 0 panics", n)
}

// FuzzRunnerReply sends any bytes as the reply to each operation of the host.
func FuzzRunnerReply(f *testing.F) {
	ops := replyOps()
	for i, op := range ops {
		b, _ := json.Marshal(op.valid)
		f.Add(uint8(i), b)
		for _, c := range op.contradictory {
			b, _ := json.Marshal(c)
			f.Add(uint8(i), b)
		}
	}
	f.Add(uint8(11), []byte(`{"entries":[]}`))
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		op := ops[int(which)%len(ops)]
		if err, panicked := shapeResult(t, op, body); panicked {
			t.Fatal(err)
		}
	})
}
