package filelock_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/parley-dev/parley/internal/filelock"
)

// Two open files of one path conflict as two processes' would: flock and
// LockFileEx both lock per open file description, not per process.
func TestLocksConflict(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	a, b := open(), open()
	if err := filelock.TryLock(a); err != nil {
		t.Fatalf("first lock: %v", err)
	}
	if err := filelock.TryLock(b); !errors.Is(err, filelock.ErrLocked) {
		t.Fatalf("second exclusive lock: got %v, want ErrLocked", err)
	}
	if err := filelock.TryRLock(b); !errors.Is(err, filelock.ErrLocked) {
		t.Fatalf("shared lock beside an exclusive one: got %v, want ErrLocked", err)
	}
	// The holder's body stays readable by others (Windows locks are
	// mandatory, so the lock must not cover it).
	if _, err := a.WriteString("body"); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "body" {
		t.Fatalf("read a locked file: got %q, %v", got, err)
	}
	if err := filelock.Unlock(a); err != nil {
		t.Fatal(err)
	}
	if err := filelock.TryRLock(b); err != nil {
		t.Fatalf("shared lock once free: %v", err)
	}
	c := open()
	if err := filelock.TryRLock(c); err != nil {
		t.Fatalf("two shared locks: %v", err)
	}
	if err := filelock.TryLock(a); !errors.Is(err, filelock.ErrLocked) {
		t.Fatalf("exclusive beside shared: got %v, want ErrLocked", err)
	}
	b.Close()
	c.Close()
	if err := filelock.Lock(a); err != nil {
		t.Fatalf("lock once every holder closed: %v", err)
	}
}
