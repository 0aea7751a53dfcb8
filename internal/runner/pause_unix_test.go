//go:build unix

package runner_test

import (
	"syscall"
	"testing"
)

// pause stops the process group pgid (SIGSTOP): a client that answers
// nothing, neither an interrupt request nor SIGINT, until it is killed.
func pause(t *testing.T, pgid int) {
	t.Helper()
	if err := syscall.Kill(-pgid, syscall.SIGSTOP); err != nil {
		t.Fatalf("stop process group %d: %v", pgid, err)
	}
}
