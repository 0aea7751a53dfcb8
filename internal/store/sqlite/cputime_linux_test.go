package sqlite

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU is the CPU time the calling thread has used. Benchmarks lock
// their goroutine to its thread and take the difference around one call:
// on a shared, loaded machine that counts the call's own work, which wall
// time mixes with the time it waited for a core. (The store is pure Go: a
// query runs on the calling goroutine.)
func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func lockThread() func() {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}
