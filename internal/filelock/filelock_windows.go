//go:build windows

package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// Windows locks are mandatory for the bytes they cover: a lock on the
// file's content would keep other processes from reading a PID file's body.
// So the lock covers one byte far past any content.
const (
	lockOffset = 1 << 62
	lockLen    = 1
)

// TryLock takes f's exclusive lock, or returns ErrLocked at once.
func TryLock(f *os.File) error {
	return lock(f, windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY)
}

// TryRLock takes a shared lock on f, or returns ErrLocked at once.
func TryRLock(f *os.File) error { return lock(f, windows.LOCKFILE_FAIL_IMMEDIATELY) }

// Lock waits for f's exclusive lock.
func Lock(f *os.File) error { return lock(f, windows.LOCKFILE_EXCLUSIVE_LOCK) }

// Unlock drops f's lock. Closing f drops it too.
func Unlock(f *os.File) error {
	ol := overlapped()
	if err := windows.UnlockFileEx(windows.Handle(f.Fd()), 0, lockLen, 0, ol); err != nil {
		return &os.PathError{Op: "UnlockFileEx", Path: f.Name(), Err: err}
	}
	return nil
}

func lock(f *os.File, flags uint32) error {
	err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, lockLen, 0, overlapped())
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return ErrLocked
	}
	if err != nil {
		return &os.PathError{Op: "LockFileEx", Path: f.Name(), Err: err}
	}
	return nil
}

func overlapped() *windows.Overlapped {
	return &windows.Overlapped{Offset: uint32(lockOffset & 0xffffffff), OffsetHigh: uint32(lockOffset >> 32)}
}
