package udiff

import "bytes"

// IsBinary says whether data is binary as git decides it for a diff: a NUL byte in its first
// 8,000 bytes. Binary content is described, never shown as hunks.
func IsBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}
