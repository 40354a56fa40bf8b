package runner

import (
	"bytes"
	"crypto/sha256"
	"os"

	"github.com/limactl-mcp/limactl-mcp/internal/runnerproto"
	"github.com/limactl-mcp/limactl-mcp/internal/tree"
)

// runEdit is the replace tool's read-modify-write in one request (runnerproto.EditRequest):
// read the file the path leads to, apply the edit, read it again and write only if its content
// still hashes to what was edited.
func runEdit(q *runnerproto.EditRequest) (*runnerproto.EditResult, error) {
	res := &runnerproto.EditResult{}
	// The size first: a file past the limit is not read at all.
	if fi, err := os.Stat(q.Path); err == nil && fi.Mode().IsRegular() && fi.Size() > q.MaxBytes {
		res.Size, res.TooLarge = fi.Size(), true
		return res, nil
	}
	read := func() (*runnerproto.ReadResult, error) {
		return runRead(&runnerproto.ReadRequest{Path: tree.Name(q.Path), Limit: q.MaxBytes, Follow: true})
	}
	r, err := read()
	switch {
	case err != nil:
		return nil, err
	case r.Missing && q.Old == "":
		res.Write = runWrite(&runnerproto.WriteRequest{Path: q.Path, Data: []byte(q.New), Mode: 0o644, MakeParents: true})
		res.Created = res.Write.Errno == "" && res.Write.NotRegular == ""
		return res, nil
	case r.Missing:
		res.Missing = true
		return res, nil
	case r.Errno != "":
		res.Errno = r.Errno
		return res, nil
	case r.NotRegular != "":
		res.NotRegular, res.Mode = r.NotRegular, r.Mode
		return res, nil
	case r.Truncated:
		res.Size, res.TooLarge = r.Size, true
		return res, nil
	}
	out, applied := q.Apply(r.Data)
	applied.Size = int64(len(r.Data))
	*res = applied
	if out == nil {
		return res, nil
	}
	// The guard: the content now must be the content edited.
	sum := sha256.Sum256(r.Data)
	if editHook != nil {
		editHook()
	}
	again, err := read()
	if err != nil || again.Missing || again.Errno != "" || again.NotRegular != "" || again.Truncated {
		res.Changed = true
		return res, nil
	}
	if now := sha256.Sum256(again.Data); !bytes.Equal(now[:], sum[:]) {
		res.Changed = true
		return res, nil
	}
	res.Write = runWrite(&runnerproto.WriteRequest{Path: q.Path, Data: out, Mode: 0o644})
	if res.Write.Errno == "" && res.Write.NotRegular == "" && res.Write.Error == "" {
		res.Replaced = res.Found
	}
	return res, nil
}

// editHook, when set (by a test), runs between the edit and the guard's second read: another
// process writing the file then.
var editHook func()
