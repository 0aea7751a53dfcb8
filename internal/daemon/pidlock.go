package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/parley-dev/parley/internal/filelock"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/safefile"
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
	for attempt := 0; attempt < 400; attempt++ {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			// Another starter judging this new file may hold its lock for a
			// moment (breakStale): it lets go at once, so wait for it.
			if err := lockSoon(f); err != nil {
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
		switch err := breakStale(path); {
		case errors.Is(err, errRetry):
			time.Sleep(10 * time.Millisecond)
		case err != nil:
			return nil, err
		}
	}
	return nil, fmt.Errorf("acquire pid lock %s: gave up after repeated contention", path)
}

// lockSoon takes f's exclusive lock, retrying for up to a second while
// another process briefly holds it.
func lockSoon(f *os.File) error {
	var err error
	for i := 0; i < 1000; i++ {
		if err = filelock.TryLock(f); !errors.Is(err, filelock.ErrLocked) {
			return err
		}
		time.Sleep(time.Millisecond)
	}
	return err
}

// errRetry says the lock is changing hands right now: look again shortly.
var errRetry = errors.New("pid lock is changing hands")

// breakStale removes the lock file at path if no live process holds it.
func breakStale(path string) error {
	f, err := safefile.OpenNoFollow(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open pid lock %s: %w", path, err)
	}
	defer f.Close()
	if !samePath(f, path) {
		return errRetry // replaced since we opened it
	}
	if err := filelock.TryLock(f); err != nil {
		if !samePath(f, path) {
			return errRetry // a starter is breaking this stale lock
		}
		li, rerr := readLock(path)
		if rerr != nil {
			return errRetry // held but not yet written: a daemon is starting
		}
		return &AlreadyRunningError{Info: li}
	}
	// Nobody holds it. A valid body means its owner died. An empty one may
	// be a starter between its create and its flock: give it time.
	if _, err := readLock(path); err != nil && !stale(path) {
		return errRetry
	}
	// Unlink it while holding its lock, so no other starter judges it now.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale pid lock %s: %w", path, err)
	}
	return nil
}

// samePath reports whether the open file f is still the file at path.
func samePath(f *os.File, path string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Stat(path)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// stale reports whether the file at path is too old to be a starting daemon's.
func stale(path string) bool {
	st, err := os.Stat(path)
	return err != nil || time.Since(st.ModTime()) > 2*time.Second
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
	if err := filelock.TryRLock(f); err != nil {
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
