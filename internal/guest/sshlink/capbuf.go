package sshlink

import (
	"bytes"
	"fmt"
)

// MaxCommandOutput bounds what is kept of a guest command's standard output that the host
// reads whole (setup and release scripts, `net report`, `uname -m`): the guest is hostile, and
// none of these says more than a few hundred kilobytes (`net report` is parsed up to 8 MB).
const MaxCommandOutput = 16 << 20

// capBuffer keeps the first max bytes written to it and notes that more came; writing never
// fails, so the command is not stopped half-way by a closed pipe.
type capBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func newCapBuffer(max int) *capBuffer { return &capBuffer{max: max} }

func (c *capBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); len(p) > room {
		c.over = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return c.buf.Write(p)
}

// result is what was kept, or an error when the command said more than max.
func (c *capBuffer) result(cmd string) (string, error) {
	if c.over {
		return "", fmt.Errorf("the guest's answer to %s was over %d bytes: refused", Truncate(cmd, 80), c.max)
	}
	return c.buf.String(), nil
}
