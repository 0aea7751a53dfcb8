//go:build unix

package mcpserver_test

import (
	"time"

	"golang.org/x/sys/unix"
)

// processCPU is the user plus system CPU time this process has used.
func processCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
