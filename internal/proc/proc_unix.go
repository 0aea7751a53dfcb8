//go:build unix

package proc

import (
	"context"
	"os"
	"os/exec"
	"syscall"
)

var stopSignals = []os.Signal{syscall.SIGTERM}

// OwnGroup makes cmd, once started, lead a process group of its own.
func OwnGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// Detach makes cmd, once started, a session of its own, free of the
// terminal and process group of its starter.
func Detach(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
}

// KillGroup kills the process group that pid leads (see OwnGroup).
func KillGroup(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }

// InterruptGroup asks the process group that pid leads to stop what it
// does (SIGINT, as Ctrl-C would).
func InterruptGroup(pid int) error { return syscall.Kill(-pid, syscall.SIGINT) }

// Terminate asks the process pid to stop gracefully (SIGTERM).
func Terminate(pid int) error { return syscall.Kill(pid, syscall.SIGTERM) }

// Kill ends the process pid at once.
func Kill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// Alive reports whether a process pid exists.
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return (err == nil || err == syscall.EPERM) && !exited(pid)
}

func onTerminate(context.Context, context.CancelFunc) func() { return func() {} }

func exitSignal(ee *exec.ExitError) (string, bool) {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String(), true
	}
	return "", false
}
