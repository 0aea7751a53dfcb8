package sqlite

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
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
