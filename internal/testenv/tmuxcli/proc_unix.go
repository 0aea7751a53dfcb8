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
