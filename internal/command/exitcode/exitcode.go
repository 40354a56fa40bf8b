// Package exitcode carries a command's exit status from its Run function to main: the exit
// codes, an error that picks one, and the error of a command that has already explained
// itself on standard error.
package exitcode

import "errors"

// Exit codes.
const (
	OK    = 0
	Error = 1
	// Pending means a command needed consent it could not get (for example a review
	// without a terminal and without --yes).
	Pending = 2
	// Interrupted means the person pressed Ctrl-C at a prompt (128 + SIGINT, as a shell
	// reports a command killed by it).
	Interrupted = 130
)

// ErrSilent is returned by a command that has already explained itself on stderr: main
// prints nothing more.
var ErrSilent = errors.New("silent error")

// codeError carries a specific exit code.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string { return e.err.Error() }
func (e *codeError) Unwrap() error { return e.err }

// With returns err, exiting with code.
func With(code int, err error) error {
	return &codeError{code: code, err: err}
}

// Of is the exit code of a command that returned err: OK for nil, the code given to With,
// otherwise Error.
func Of(err error) int {
	if err == nil {
		return OK
	}
	var ce *codeError
	if errors.As(err, &ce) {
		return ce.code
	}
	return Error
}
