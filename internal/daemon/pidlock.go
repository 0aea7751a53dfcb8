package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/parley-dev/parley/internal/filelock"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/proc"
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

// pidLock is a held PID lock: the lock file, and an advisory lock on it
// (filelock) for as long as the daemon lives, so that the kernel itself
// tells a live holder from a dead one (no pid-reuse guesswork).
//
// The lock is the kernel's lock on the file that is at the path. A lock on a
// file that is no longer there (removed by its holder as it stopped, or
// replaced) guards nothing, so a starter that got one checks, after locking,
// that the path still names the file it locked, and starts over if not.
// Only a holder removes the file, and only while it holds its lock: no
// starter deletes a file another may be holding, whatever the interleaving
// of starters, stops and kill -9s.
type pidLock struct {
	path string
	f    *os.File
}

// acquireLock takes the PID lock at path. A lock whose holder died is stale
// and taken over; a live holder gives *AlreadyRunningError.
func acquireLock(path string, info LockInfo) (*pidLock, error) {
	body, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	for attempt := 0; attempt < 500; attempt++ {
		l, err := tryLock(path, append(body, '\n'), attempt < 100)
		if !errors.Is(err, errRetry) {
			return l, err
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil, fmt.Errorf("acquire pid lock %s: gave up after repeated contention", path)
}

// errRetry says the lock is changing hands right now: look again shortly.
var errRetry = errors.New("pid lock is changing hands")

// tryLock makes one attempt at the lock. checkPID doubts a holder whose body
// names no live process (for the first second: after that, the holder may
// be one whose pid this process cannot see).
func tryLock(path string, body []byte, checkPID bool) (*pidLock, error) {
	f, err := openLock(path, true)
	if err != nil {
		return nil, fmt.Errorf("open pid lock %s: %w", path, err)
	}
	if err := filelock.TryLock(f); err != nil {
		defer f.Close()
		if !errors.Is(err, filelock.ErrLocked) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		// Held. By a daemon, unless the file is on its way out (its holder
		// is stopping) or the holder has not written its body yet (a body
		// naming a dead process is a dead holder's, not yet overwritten).
		li, rerr := parseLock(f, path)
		if rerr != nil || !samePath(f, path) || (checkPID && !proc.Alive(li.PID)) {
			return nil, errRetry
		}
		return nil, &AlreadyRunningError{Info: li}
	}
	// Ours, if the path still names the file we locked.
	if !samePath(f, path) {
		f.Close()
		return nil, errRetry
	}
	// Whatever body it has is a dead holder's.
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt(body, 0)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		os.Remove(path)
		f.Close()
		return nil, fmt.Errorf("write pid lock %s: %w", path, err)
	}
	return &pidLock{path: path, f: f}, nil
}

// samePath reports whether the open file f is still the file at path.
func samePath(f *os.File, path string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Lstat(path)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// parseLock reads the body of the lock file f.
func parseLock(f *os.File, path string) (LockInfo, error) {
	var li LockInfo
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 64<<10))
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

func readLock(path string) (LockInfo, error) {
	f, err := openLock(path, false)
	if err != nil {
		return LockInfo{}, err
	}
	defer f.Close()
	return parseLock(f, path)
}

// ReadLock returns the lock file's content and whether a live daemon holds it.
func ReadLock(path string) (LockInfo, bool) {
	f, err := openLock(path, false)
	if err != nil {
		return LockInfo{}, false
	}
	defer f.Close()
	li, err := parseLock(f, path)
	if err != nil {
		return li, false
	}
	if err := filelock.TryRLock(f); err != nil {
		return li, errors.Is(err, filelock.ErrLocked) && samePath(f, path)
	}
	return li, false
}

// release removes the lock file while still holding its lock, then drops
// the lock: a starter that opened the file before the removal finds, once
// it gets the lock, that the path no longer names it.
func (l *pidLock) release() {
	if l == nil {
		return
	}
	os.Remove(l.path)
	l.f.Close()
}

// LockHome takes the state directory's PID lock for a maintenance command
// (parley restore) that must not run beside a daemon: a running daemon gives
// *AlreadyRunningError, and no daemon can start until unlock is called.
func LockHome(paths home.Paths) (unlock func(), err error) {
	host, _ := os.Hostname()
	l, err := acquireLock(paths.PID, LockInfo{PID: os.Getpid(), StartedAt: time.Now().UTC(), Hostname: host, UID: os.Getuid(), SockPath: paths.Socket, Argv: os.Args})
	if err != nil {
		return nil, err
	}
	return l.release, nil
}
