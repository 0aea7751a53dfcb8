package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestWritePanicEndsProcess: a write that panics on its caller's goroutine
// ends the process even when the caller recovers panics (as net/http does
// for its handlers), instead of leaving the store's lead held and every
// later write waiting.
func TestWritePanicEndsProcess(t *testing.T) {
	if os.Getenv("PARLEY_TEST_WRITE_PANIC") == "1" {
		db := openTest(t)
		func() {
			defer func() { recover() }() // what net/http does
			db.wr.do(context.Background(), false, func(context.Context, *sql.Conn) error { panic("boom") })
		}()
		t.Fatal("the process lived on past a panicking write")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWritePanicEndsProcess$")
	cmd.Env = append(os.Environ(), "PARLEY_TEST_WRITE_PANIC=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the process exited 0:\n%s", out)
	}
	if !strings.Contains(string(out), "sqlite writer: a write panicked: boom") {
		t.Fatalf("no panic of the writer in the output (%v):\n%s", err, out)
	}
}

// TestQueuedWriteCancelled: a write still queued behind a commit under way
// returns its ctx's error as soon as ctx ends, and never runs; the writes
// queued with it still commit, and the store goes on taking writes.
func TestQueuedWriteCancelled(t *testing.T) {
	db := openTest(t)
	release, blocked := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- db.wr.do(context.Background(), false, func(context.Context, *sql.Conn) error {
			close(blocked)
			<-release
			return nil
		})
	}()
	<-blocked
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error, 1)
	ran := make(chan struct{}, 1)
	go func() {
		cancelled <- db.wr.do(ctx, false, func(context.Context, *sql.Conn) error { ran <- struct{}{}; return nil })
	}()
	kept := make(chan error, 1)
	go func() {
		kept <- db.wr.do(context.Background(), false, func(context.Context, *sql.Conn) error { return nil })
	}()
	// Both wait behind the first, which holds the lead; the cancelled one leaves the queue.
	for {
		db.wr.mu.Lock()
		n := len(db.wr.queue)
		db.wr.mu.Unlock()
		if n == 2 {
			break
		}
		runtime.Gosched()
	}
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled write: got %v, want context.Canceled", err)
	}
	close(release)
	for name, ch := range map[string]chan error{"first": first, "kept": kept} {
		if err := <-ch; err != nil {
			t.Fatalf("%s write: %v", name, err)
		}
	}
	select {
	case <-ran:
		t.Fatal("the cancelled write ran")
	default:
	}
	if err := db.wr.do(context.Background(), false, func(context.Context, *sql.Conn) error { return nil }); err != nil {
		t.Fatalf("a write after: %v", err)
	}
}
