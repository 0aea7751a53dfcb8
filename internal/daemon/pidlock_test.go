package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestPIDLockOneWinner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "parley.pid")
	const n = 16
	var wg sync.WaitGroup
	locks := make(chan *pidLock, n)
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := acquireLock(path, LockInfo{PID: 1000 + i, SockPath: "s"})
			if err != nil {
				errs <- err
				return
			}
			locks <- l
		}()
	}
	wg.Wait()
	close(locks)
	close(errs)
	var held []*pidLock
	for l := range locks {
		held = append(held, l)
	}
	if len(held) != 1 {
		t.Fatalf("got %d holders, want 1", len(held))
	}
	for err := range errs {
		var are *AlreadyRunningError
		if !errors.As(err, &are) {
			t.Errorf("loser: got %v, want AlreadyRunningError", err)
		}
	}
	if _, alive := ReadLock(path); !alive {
		t.Error("ReadLock: want alive while held")
	}
	held[0].release()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("lock file after release: %v", err)
	}
	l, err := acquireLock(path, LockInfo{PID: 1})
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	l.release()
}

func TestPIDLockStale(t *testing.T) {
	for _, content := range []string{`{"pid":999999,"sockPath":"x"}`, "garbage", ""} {
		path := filepath.Join(t.TempDir(), "parley.pid")
		os.WriteFile(path, []byte(content), 0o600)
		// An unreadable lock is only judged stale once it is old: a young one
		// may belong to a daemon between its create and its write.
		old := time.Now().Add(-time.Minute)
		os.Chtimes(path, old, old)
		if _, alive := ReadLock(path); alive {
			t.Errorf("%q: ReadLock says alive", content)
		}
		l, err := acquireLock(path, LockInfo{PID: 42, SockPath: "s"})
		if err != nil {
			t.Fatalf("stale lock %q: %v", content, err)
		}
		li, err := readLock(path)
		if err != nil || li.PID != 42 {
			t.Errorf("new lock: got %+v %v", li, err)
		}
		st, _ := os.Stat(path)
		if st.Mode().Perm() != 0o600 {
			t.Errorf("lock mode: got %o", st.Mode().Perm())
		}
		l.release()
	}
}
