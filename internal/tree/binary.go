package tree

import (
	"bytes"
	"unicode/utf8"
)

// IsBinary says whether content is binary as git decides it (for a diff, and for `git grep
// -I`): a NUL byte in its first 8,000 bytes. It is the one home of that rule: the diff, the
// file tools and the runner's own search all ask it.
func IsBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}

// NotText says whether content is not text as the file tools decide it (read_file describes it
// instead of returning it, replace refuses to edit it): binary by git's rule (IsBinary), or
// invalid UTF-8 in its first 8,000 bytes (a multi-byte character cut by that end does not
// count). The host's tools and the runner's edit both ask it.
func NotText(data []byte) bool {
	if IsBinary(data) {
		return true
	}
	sample := data[:min(len(data), 8000)]
	// A multi-byte character may straddle the end of the sample.
	for i := 0; i < utf8.UTFMax && len(sample) > 0; i++ {
		if utf8.Valid(sample) {
			return false
		}
		if len(sample) < len(data) {
			sample = sample[:len(sample)-1]
			continue
		}
		break
	}
	return !utf8.Valid(sample)
}
