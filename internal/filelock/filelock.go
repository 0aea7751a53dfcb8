// Package filelock holds advisory locks on open files, the same way on every
// platform: flock(2) on Unix, LockFileEx on Windows. The kernel drops a lock
// when its process dies, so a held lock means a live holder. The daemon's PID
// lock and the test binaries' build cache use it.
package filelock

import "errors"

// ErrLocked says another process (or another open file of this one) holds a
// conflicting lock.
var ErrLocked = errors.New("file is locked by another process")
