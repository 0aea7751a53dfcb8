package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// LockInfo is the body of the PID lock file (seed 003).
type LockInfo struct {
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"startedAt"`
	Hostname  string    `json:"hostname"`
	UID       int       `json:"uid"`
	SockPath  string    `json:"sockPath"`
	Argv      []string  `json:"argv"`
}

// AlreadyRunningError says another live daemon holds the lock.
type AlreadyRunningError struct{ Info LockInfo }

func (e *AlreadyRunningError) Error() string {
	return fmt.Sprintf("the parley daemon is already running (pid %d, socket %s): stop it with `parley daemon stop`", e.Info.PID, e.Info.SockPath)
}

// pidLock is a held PID lock: the file made by exclusive create, and an flock
// on it for as long as the daemon lives, so that the kernel itself tells a
// live holder from a dead one (no pid-reuse guesswork).
type pidLock struct {
	path string
	f    *os.File
}

// acquireLock takes the PID lock at path. A lock whose holder died is stale
// and replaced; a live holder gives *AlreadyRunningError.
func acquireLock(path string, info LockInfo) (*pidLock, error) {
	body, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	for attempt := 0; attempt < 20; attempt++ {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				f.Close()
				os.Remove(path)
				return nil, fmt.Errorf("lock %s: %w", path, err)
			}
			if _, err := f.Write(append(body, '\n')); err != nil {
				f.Close()
				os.Remove(path)
				return nil, fmt.Errorf("write pid lock %s: %w", path, err)
			}
			return &pidLock{path: path, f: f}, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("create pid lock %s: %w", path, err)
		}
		if err := breakStale(path); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("acquire pid lock %s: gave up after repeated contention", path)
}

// breakStale removes the lock file at path if no live process holds it.
func breakStale(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open pid lock %s: %w", path, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		li, rerr := readLock(path)
		if rerr != nil {
			// Held but not yet written: a daemon is starting this instant.
			time.Sleep(10 * time.Millisecond)
			if li, rerr = readLock(path); rerr != nil {
				return &AlreadyRunningError{Info: LockInfo{SockPath: "(starting)"}}
			}
		}
		return &AlreadyRunningError{Info: li}
	}
	// We hold the old file's lock: its owner is gone. Unlink it while holding
	// the lock so no other starter can judge it at the same moment.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale pid lock %s: %w", path, err)
	}
	return nil
}

func readLock(path string) (LockInfo, error) {
	var li LockInfo
	b, err := os.ReadFile(path)
	if err != nil {
		return li, err
	}
	if err := json.Unmarshal(b, &li); err != nil {
		return li, fmt.Errorf("parse pid lock %s: %w", path, err)
	}
	if li.PID <= 0 {
		return li, fmt.Errorf("parse pid lock %s: no pid", path)
	}
	return li, nil
}

// ReadLock returns the lock file's content and whether a live daemon holds it.
func ReadLock(path string) (LockInfo, bool) {
	li, err := readLock(path)
	if err != nil {
		return li, false
	}
	f, err := os.Open(path)
	if err != nil {
		return li, false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return li, true
	}
	return li, false
}

// release removes the lock file and drops the lock.
func (l *pidLock) release() {
	if l == nil {
		return
	}
	os.Remove(l.path)
	l.f.Close()
}
