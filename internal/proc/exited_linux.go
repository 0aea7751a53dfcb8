package proc

import (
	"bytes"
	"os"
	"strconv"
)

// exited reports whether pid has exited and waits to be reaped (a zombie):
// kill(pid, 0) still finds such a process, though nothing of it runs. A
// detached daemon's parent is the first process of its PID namespace, and
// in a container that one may reap late or never: a daemon killed -9 read
// as alive for 1-2 s here, and would for good under a first process that
// never reaps.
func exited(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false // no /proc: kill's answer stands
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	switch b[i+2] {
	case 'Z', 'X':
		return true
	}
	return false
}
