package agentconfig

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxConfigFileBytes bounds every agent or project configuration file configure reads: the
// largest real ones are a few KiB (~/.claude.json, which Claude Code also fills with its
// history, can reach a few hundred), and a file of gigabytes, or a device, must not make
// configure read without end.
const MaxConfigFileBytes = 4 << 20

// readConfigFile returns the file's content, or nil (and no error) if it does not exist. It
// refuses what is not a regular file (opened without blocking, checked on the open file: a
// fifo swapped in after a stat cannot hang it) and a file over MaxConfigFileBytes.
func readConfigFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("refusing to change %s: it is not a regular file", path)
	}
	if info.Size() > MaxConfigFileBytes {
		return nil, tooLarge(path, info.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxConfigFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(b) > MaxConfigFileBytes { // it grew since the stat
		return nil, tooLarge(path, int64(len(b)))
	}
	if b == nil {
		b = []byte{} // exists but empty: keep it distinct from "does not exist"
	}
	return b, nil
}

func tooLarge(path string, size int64) error {
	return fmt.Errorf("refusing to read %s: it has %d bytes, more than the %d MiB an agent's configuration file may have (is it the right file?)", path, size, MaxConfigFileBytes>>20)
}
