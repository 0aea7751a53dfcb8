//go:build !windows

package tmuxcli

import (
	"syscall"
	"time"
)

// waitExit waits up to within for the process pid to be gone (it is not
// ours to reap: tmux or the Codex TUI started it), and reports whether it
// is. Not being our child, its exit can only be polled for.
func waitExit(pid int, within time.Duration) bool {
	if pid <= 1 {
		return true
	}
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return true
		}
	}
	return false
}

// killGroup kills pid and its process group (a pane's program leads its
// own): a program that outlives its tmux session's hang-up (opencode's
// TUI does) must not run on beside the rest of the suite.
func killGroup(pid int) {
	if pid <= 1 {
		return
	}
	syscall.Kill(-pid, syscall.SIGKILL)
	syscall.Kill(pid, syscall.SIGKILL)
}
