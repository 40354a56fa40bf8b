// Package lockedbuf is a bytes.Buffer that a writer (a process's output, a server's log) and
// a test reading it may use from different goroutines.
package lockedbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer behind a mutex.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is what was written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
