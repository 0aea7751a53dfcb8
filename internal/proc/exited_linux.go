package proc

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// exited reports whether pid has exited and waits to be reaped (a zombie):
// kill(pid, 0) still finds such a process, though nothing of it runs. A
// detached daemon's parent is the first process of its PID namespace, and
// in a container that one may reap late or never: a daemon killed -9 read
// as alive for 1-2 s here, and would for good under a first process that
// never reaps. Every thread must be gone: the first one to die shows
// zombie in the process's own stat while the others, and the files they
// share (its sockets), live on.
func exited(pid int) bool {
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/stat")
	if err != nil || len(tasks) == 0 {
		return false // no /proc: kill's answer stands
	}
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // that thread is gone
		}
		if !deadState(b) {
			return false
		}
	}
	return true
}

// deadState reads a /proc stat line, "pid (comm) state ...", where comm may
// hold spaces and parentheses: the state is a zombie's or a dead task's.
func deadState(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	return stat[i+2] == 'Z' || stat[i+2] == 'X'
}
