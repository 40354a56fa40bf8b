package tree

import "bytes"

// IsBinary says whether content is binary as git decides it (for a diff, and for `git grep
// -I`): a NUL byte in its first 8,000 bytes. It is the one home of that rule: the diff, the
// file tools and the runner's own search all ask it.
func IsBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}
