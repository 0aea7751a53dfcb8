//go:build unix

package filelock

import (
	"errors"
	"os"
	"syscall"
)

// TryLock takes f's exclusive lock, or returns ErrLocked at once.
func TryLock(f *os.File) error { return try(f, syscall.LOCK_EX) }

// TryRLock takes a shared lock on f, or returns ErrLocked at once.
func TryRLock(f *os.File) error { return try(f, syscall.LOCK_SH) }

// Lock waits for f's exclusive lock.
func Lock(f *os.File) error { return flock(f, syscall.LOCK_EX) }

// Unlock drops f's lock. Closing f drops it too.
func Unlock(f *os.File) error { return flock(f, syscall.LOCK_UN) }

func try(f *os.File, how int) error {
	err := flock(f, how|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			if err != nil {
				return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}
