package tui

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/signal"
	"sync"

	"github.com/muesli/cancelreader"
	"golang.org/x/term"
)

// accInput is the input of accessible mode. huh reads each answer with a new bufio.Scanner,
// so Read returns at most one line. It aborts the review on Esc or Ctrl-C typed in a line,
// on SIGINT (Ctrl-C on a terminal in line mode), and at the end of the input.
type accInput struct {
	br      *bufio.Reader
	pending []byte
	mu      sync.Mutex
	abort   bool
}

func (a *accInput) aborted() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.abort
}

func (a *accInput) setAborted() {
	a.mu.Lock()
	a.abort = true
	a.mu.Unlock()
}

func (a *accInput) Read(p []byte) (int, error) {
	if a.aborted() {
		return 0, io.EOF
	}
	if len(a.pending) == 0 {
		line, err := a.br.ReadBytes('\n')
		if len(line) == 0 || loneEsc(line) || bytes.ContainsAny(line, "\x03\x04") {
			// The end of the input (or an error: err) before all questions were answered,
			// or Esc/Ctrl-C/Ctrl-D typed.
			_ = err
			a.setAborted()
			return 0, io.EOF
		}
		a.pending = line
	}
	n := copy(p, a.pending)
	a.pending = a.pending[n:]
	return n, nil
}

// loneEsc says whether a line holds an Esc that does not start the sequence of a cursor or
// function key (an arrow key typed by mistake is an invalid answer, not an abort).
func loneEsc(line []byte) bool {
	for i, c := range line {
		if c == 0x1b && (i+1 >= len(line) || (line[i+1] != '[' && line[i+1] != 'O')) {
			return true
		}
	}
	return false
}

// startAccessibleInput sets up r.acc; stop undoes it.
func (r *reviewer) startAccessibleInput() (stop func()) {
	src := r.in
	var cancel func() bool
	var closeFn func() error
	if f, ok := r.in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		cr, err := cancelreader.NewReader(f)
		if err == nil {
			src, cancel, closeFn = cr, cr.Cancel, cr.Close
		}
	}
	r.acc = &accInput{br: bufio.NewReader(src)}
	if cancel == nil {
		return func() {}
	}
	sig := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(sig, os.Interrupt)
	go func() {
		select {
		case <-sig:
			r.acc.setAborted()
			cancel()
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sig)
		close(done)
		_ = closeFn()
	}
}
