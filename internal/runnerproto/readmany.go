package runnerproto

import "github.com/limactl-mcp/limactl-mcp/internal/tree"

// ReadManyRequest reads whole regular files under Root in one request: the review describes
// hundreds of changed files, and one round trip each was most of its first screen. Each path
// is opened as Read opens one (no link followed at its end, without blocking, and fstat after
// the open decides); a file comes back only when it is at most Each bytes and the files
// returned so far stay within Total. The others come back empty, for the caller to read alone
// (Read says why one cannot be).
type ReadManyRequest struct {
	Root  string      `json:"root"`
	Paths []tree.Name `json:"paths"`
	Each  int64       `json:"each"`
	Total int64       `json:"total"`
}

// MaxReadManyTotal bounds a ReadManyRequest's Total: its answer stays well within one frame
// (JSON carries bytes as base64, a third more).
const MaxReadManyTotal = 16 << 20

// ReadManyResult has one entry per path, in the request's order.
type ReadManyResult struct {
	Files []ReadManyFile `json:"files"`
}

// ReadManyFile is one path's answer: OK with its whole bytes, or not read.
type ReadManyFile struct {
	OK   bool   `json:"ok,omitempty"`
	Data []byte `json:"data,omitempty"`
}
