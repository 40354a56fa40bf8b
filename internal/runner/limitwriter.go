package runner

import (
	"bytes"
	"errors"
)

// limitWriter keeps n bytes and then fails, which stops the writer on the other side: a
// search's output (grep.go) and a login shell's (loginenv.go).
type limitWriter struct {
	w   *bytes.Buffer
	n   int
	cut bool
}

var errLimit = errors.New("output limit reached")

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n > 0 && l.w.Len()+len(p) > l.n {
		l.w.Write(p[:l.n-l.w.Len()])
		l.cut = true
		return 0, errLimit
	}
	return l.w.Write(p)
}
