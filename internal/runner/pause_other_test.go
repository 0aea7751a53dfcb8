//go:build !unix

package runner_test

import "testing"

// pause: this platform cannot stop a process from outside.
func pause(t *testing.T, pgid int) {
	t.Skip("no SIGSTOP on this platform")
}
