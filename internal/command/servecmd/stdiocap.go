package servecmd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioMaxMessage is the most one MCP message over stdio may hold: the go-sdk's own line
// limit (mcp.DefaultMaxLineLength, which serve --http's body limit matches).
const stdioMaxMessage = mcp.DefaultMaxLineLength

// stdioTransport is the stdio transport of serve: newline-delimited JSON-RPC on in and out,
// where a message over stdioMaxMessage is answered with a clear error instead of ending the
// connection (the go-sdk stops reading at such a message, which the agent sees as a dead
// server).
func stdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	return &mcp.IOTransport{
		Reader:        &lineCapReader{src: in, r: bufio.NewReaderSize(in, 64<<10), max: stdioMaxMessage},
		Writer:        nopWriteCloser{out},
		MaxLineLength: stdioMaxMessage + 1<<10, // the cap is lineCapReader's; the SDK's is a backstop
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// lineCapReader passes lines through, and replaces a line longer than max (which it reads to
// its end without keeping it) by a request for a method no server has, whose name says what
// happened: the SDK answers it with a JSON-RPC error for the same id, and reads on. A line
// whose id cannot be found in its first bytes is dropped.
type lineCapReader struct {
	src     io.Reader
	r       *bufio.Reader
	max     int
	pending []byte
}

// idPattern finds a message's id near its start: clients write it before params, which is
// where a large message is large.
var idPattern = regexp.MustCompile(`"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9]+)`)

func (l *lineCapReader) Read(p []byte) (int, error) {
	for len(l.pending) == 0 {
		line, err := l.line()
		if len(line) == 0 && err != nil {
			return 0, err
		}
		l.pending = line
	}
	n := copy(p, l.pending)
	l.pending = l.pending[n:]
	return n, nil
}

// line is the next line (with its newline), or its replacement.
func (l *lineCapReader) line() ([]byte, error) {
	var line []byte
	for {
		chunk, err := l.r.ReadSlice('\n')
		if len(line)+len(chunk) > l.max {
			head := append(line, chunk...)[:min(len(line)+len(chunk), 4<<10)]
			size := len(line) + len(chunk)
			for errors.Is(err, bufio.ErrBufferFull) {
				chunk, err = l.r.ReadSlice('\n')
				size += len(chunk)
			}
			if m := idPattern.FindSubmatch(head); m != nil {
				method := fmt.Sprintf("message too large: %d bytes, over the %d-byte limit of one MCP message on stdio; nothing was done. Send less in one call: write_file takes at most 10 MiB, so write a large file in parts (write_file, then append with run_shell_command) or generate it in the guest with run_shell_command", size, l.max)
				return []byte(`{"jsonrpc":"2.0","id":` + string(m[1]) + `,"method":` + strconv.Quote(method) + `,"params":{}}` + "\n"), nil
			}
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				return nil, err
			}
			return nil, nil // dropped: Read reads on
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// Close closes the input, which ends a read in progress (standard input at shutdown).
func (l *lineCapReader) Close() error {
	if c, ok := l.src.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
