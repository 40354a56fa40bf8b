// Package iostreams carries the standard streams a command uses, so that every command can be
// run in tests without a terminal (the pattern of GitHub's gh CLI).
//
// It is also the printer: every command prints through ErrOut and Out, and what reaches a
// terminal through them passes termsafe's Writer, which escapes every character a terminal
// would not show as itself (escape sequences, C1 controls, carriage returns and backspaces,
// bidi controls, invisible characters) whether it came from our own words or from the guest.
// Only four things write to the terminal raw, through RawOut and RawErrOut: the review's TUI
// and watch's (which draw with escape sequences of their own and escape guest text
// themselves, with termsafe),
// the guest command that `shell` runs on the person's terminal (as `limactl shell` does), and
// the MCP protocol on stdio.
package iostreams

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/limactl-mcp/limactl-mcp/internal/termsafe"
)

// IOStreams are the streams one command invocation reads and writes.
type IOStreams struct {
	In io.Reader
	// Out is standard output: escaped (termsafe.Writer) when it is a terminal, as it is when
	// it is not (--json, --patch into a file or a pipe: the bytes a program reads).
	Out io.Writer
	// ErrOut is standard error, always escaped: it is for people only.
	ErrOut io.Writer

	// rawOut and rawErrOut are the streams under Out and ErrOut.
	rawOut, rawErrOut io.Writer

	// stdinTTY and stdoutTTY say whether In and Out are terminals.
	stdinTTY  bool
	stdoutTTY bool
}

// New returns streams over in, out and errOut; stdinTTY and stdoutTTY say which are terminals.
func New(in io.Reader, out, errOut io.Writer, stdinTTY, stdoutTTY bool) *IOStreams {
	s := &IOStreams{In: in, rawOut: out, rawErrOut: errOut, stdinTTY: stdinTTY}
	s.ErrOut = termsafe.NewWriter(errOut)
	s.setStdoutTTY(stdoutTTY)
	return s
}

// System returns the process's own streams.
func System() *IOStreams {
	return New(os.Stdin, os.Stdout, os.Stderr, term.IsTerminal(int(os.Stdin.Fd())), term.IsTerminal(int(os.Stdout.Fd())))
}

// Test returns streams backed by buffers, none of them a terminal. The buffers hold what the
// streams wrote (for ErrOut, and for Out once SetTTY makes it a terminal, after escaping).
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return New(in, out, errOut, false, false), in, out, errOut
}

// IsStdinTTY says whether standard input is a terminal.
func (s *IOStreams) IsStdinTTY() bool { return s.stdinTTY }

// IsStdoutTTY says whether standard output is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// SetTTY marks the streams as terminals (for tests of interactive paths): Out is escaped from
// then on when stdout is set.
func (s *IOStreams) SetTTY(stdin, stdout bool) {
	s.stdinTTY = stdin
	s.setStdoutTTY(stdout)
}

func (s *IOStreams) setStdoutTTY(tty bool) {
	s.stdoutTTY = tty
	if s.rawOut == nil {
		s.rawOut = s.Out
	}
	if tty {
		s.Out = termsafe.NewWriter(s.rawOut)
	} else {
		s.Out = s.rawOut
	}
}

// RawOut is standard output without escaping: only for the review's and watch's TUIs, the terminal of a
// `shell` command and the MCP protocol on stdio (see the package's comment).
func (s *IOStreams) RawOut() io.Writer {
	if s.rawOut != nil {
		return s.rawOut
	}
	return s.Out
}

// RawErrOut is standard error without escaping: only for the terminal of a `shell` command.
func (s *IOStreams) RawErrOut() io.Writer {
	if s.rawErrOut != nil {
		return s.rawErrOut
	}
	return s.ErrOut
}

// PrintError prints err as the command's last word on ErrOut: "limactl-mcp: " and the message,
// escaped, its further lines indented (a line break in guest text cannot make a line of ours).
func (s *IOStreams) PrintError(err error) {
	fmt.Fprintf(s.errOut(), "limactl-mcp: %s\n", termsafe.Lines(err.Error(), "  "))
}

// errOut is ErrOut, escaped even when a caller built the streams by hand.
func (s *IOStreams) errOut() io.Writer {
	if _, ok := s.ErrOut.(*termsafe.Writer); ok {
		return s.ErrOut
	}
	return termsafe.NewWriter(s.ErrOut)
}
