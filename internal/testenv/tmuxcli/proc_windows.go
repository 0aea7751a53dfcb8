//go:build windows

package tmuxcli

import "time"

// waitExit: tmux does not run on Windows; nothing to wait for.
func waitExit(pid int, within time.Duration) bool { return true }

// killGroup: tmux does not run on Windows; nothing to kill.
func killGroup(pid int) {}
