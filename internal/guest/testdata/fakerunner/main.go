// Command fakerunner plays a guest runner the agent replaced: it speaks the protocol's framing
// but answers as its mode (its first argument) says, for the host's tests.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"io"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
)

func main() {
	home, _ := os.UserHomeDir()
	mode := ""
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	out := bufio.NewWriter(os.Stdout)
	out.WriteString(runnerproto.Magic)
	frame := func(v any) {
		b, _ := json.Marshal(v)
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
		out.Write(hdr[:])
		out.Write(b)
		out.Flush()
	}
	frame(runnerproto.Response{Hello: &runnerproto.Hello{Version: runnerproto.Version, PID: os.Getpid(), Home: home}})
	seed := int64(1)
	if s, ok := strings.CutPrefix(mode, "random:"); ok {
		seed, _ = strconv.ParseInt(s, 10, 64)
		mode = "random"
	}
	rnd := rand.New(rand.NewSource(seed))
	in := bufio.NewReader(os.Stdin)
	for {
		var req runnerproto.Request
		if err := runnerproto.ReadFrame(in, &req); err != nil {
			return
		}
		if req.Signal != nil {
			continue
		}
		switch mode {
		case "silent":
			// Never answers.
		case "empty":
			frame(map[string]any{"id": req.ID})
		case "hash-count":
			frame(map[string]any{"id": req.ID, "hash": map[string]any{"hashes": []string{}}, "scan": map[string]any{"entries": []any{map[string]any{"p": "../../etc/passwd", "t": "file"}}}, "exec": map[string]any{"stdout": map[string]any{"head": "QUFBQUFBQUFBQUFB", "total": 1}}})
		case "oversize":
			var hdr [4]byte
			binary.BigEndian.PutUint32(hdr[:], runnerproto.MaxFrame+1)
			out.Write(hdr[:])
			out.Flush()
			// Then nothing more until the client gives up and closes its end: no test leaves
			// it behind (it once slept an hour under sshd after its test ended). Ten minutes at
			// most, whatever the client does.
			go func() { time.Sleep(10 * time.Minute); os.Exit(0) }()
			_, _ = io.Copy(io.Discard, in)
			return
		case "read-endless":
			// Every read: all the bytes asked for, and "there is more", for ever.
			if req.Read != nil {
				frame(runnerproto.Response{ID: req.ID, Read: &runnerproto.ReadResult{Data: make([]byte, req.Read.Limit), Size: 1, Truncated: true}})
			} else {
				frame(map[string]any{"id": req.ID})
			}
		case "read-short":
			// "There is more", with less than asked for (nothing, after the first read).
			if req.Read != nil {
				data := []byte("x")
				if req.Read.Offset > 0 {
					data = nil
				}
				frame(runnerproto.Response{ID: req.ID, Read: &runnerproto.ReadResult{Data: data, Size: 1 << 30, Truncated: true}})
			} else {
				frame(map[string]any{"id": req.ID})
			}
		case "ckpt-bare":
			// A checkpoint manifest without its checkpoint (the host dereferenced it).
			if req.CkptManifest != nil {
				frame(map[string]any{"id": req.ID, "ckpt_manifest": map[string]any{"entries": []any{}, "object_dir": home + "/objects"}})
			} else {
				frame(map[string]any{"id": req.ID})
			}
		case "garbage":
			out.Write([]byte{0, 0, 0, 5, '{', '{', '{', 'x', 'y'})
			out.Flush()
		case "random":
			frame(randomReply(rnd, req.ID))
		}
	}
}

// randomReply is a reply of random shape: fields present or not, of the right type or not,
// sizes that lie.
func randomReply(r *rand.Rand, id uint64) any {
	val := func() any {
		switch r.Intn(11) {
		case 0:
			return nil
		case 1:
			return r.Intn(1<<20) - 1000
		case 2:
			return strings.Repeat("A", r.Intn(200))
		case 3:
			return []any{"x", -1, map[string]any{"p": "/abs", "t": "weird", "s": -5}}
		case 4:
			return map[string]any{"hashes": []string{"zz", strings.Repeat("a", 64)}}
		case 5:
			return map[string]any{"entries": []any{map[string]any{"p": "a/../../b", "t": "file", "s": 1}, map[string]any{"p": "x", "t": "dir"}, map[string]any{"p": "x", "t": "dir"}}}
		case 7:
			return map[string]any{"data": "QUFBQUFBQUFBQUFB", "size": -1, "not_regular": []string{"dir", "weird", ""}[r.Intn(3)], "missing": r.Intn(2) == 0}
		case 6:
			return map[string]any{"stdout": map[string]any{"head": "QUFB", "tail": "QUFB", "total": -3}, "exit_code": 0}
		case 8:
			// Processes said to hold a command's output: too many, too long, of the wrong type.
			held := []any{strings.Repeat("pid 1 ", 100)}
			for range r.Intn(40) {
				held = append(held, "pid 2 (sleep)")
			}
			if r.Intn(3) == 0 {
				held = append(held, 7)
			}
			return map[string]any{"stdout": map[string]any{"total": 0}, "stderr": map[string]any{"total": 0}, "held_by": held}
		case 9:
			// A write reply that lies: an unknown type, an errno of any length.
			return map[string]any{"not_regular": []string{"dir", "weird", "other"}[r.Intn(3)], "errno": strings.Repeat("E", r.Intn(40)), "error": strings.Repeat("x", r.Intn(9000))}
		}
		return map[string]any{"matches": []string{"/a", "/b", "/c"}, "output": strings.Repeat("x", 5000)}
	}
	m := map[string]any{"id": id}
	for _, k := range []string{"error", "exec", "glob", "grep", "scan", "hash", "list", "read", "write"} {
		if r.Intn(3) == 0 {
			m[k] = val()
		}
	}
	if r.Intn(10) == 0 {
		m["id"] = id + 1
	}
	return m
}
