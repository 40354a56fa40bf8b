package runner

import "golang.org/x/sys/unix"

func syscallKillGroup(pid int) error { return unix.Kill(-pid, unix.SIGKILL) }
