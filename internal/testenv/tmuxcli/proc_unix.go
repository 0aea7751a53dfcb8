//go:build !windows

package tmuxcli

import (
	"syscall"
	"time"
)

// waitExit waits up to within for the process pid to be gone (it is not
// ours to reap: tmux or the Codex TUI started it).
func waitExit(pid int, within time.Duration) {
	if pid <= 1 {
		return
	}
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
	}
}
