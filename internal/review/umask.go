package review

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// readUmask reads the process's umask without changing it where the system says it
// (/proc/self/status on Linux); elsewhere it sets and restores it once, at the first apply,
// before any file is written.
func readUmask() uint32 {
	if f, err := os.Open("/proc/self/status"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "Umask:"); ok {
				if n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return uint32(n)
				}
			}
		}
	}
	m := syscall.Umask(0o022)
	syscall.Umask(m)
	return uint32(m)
}
