//go:build unix

package terminal

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/crypto/ssh"
	"golang.org/x/term"
)

// watchResize passes the size of the terminal fd to the guest's PTY whenever it changes
// (SIGWINCH), until the returned function is called.
func watchResize(fd int, s *ssh.Session) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-ch:
				if w, h, err := term.GetSize(fd); err == nil {
					_ = s.WindowChange(h, w)
				}
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}
