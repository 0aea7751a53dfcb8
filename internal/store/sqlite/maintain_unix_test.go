//go:build unix

package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/parley-dev/parley/internal/hub"
)

// TestOutOfFilesSaysSo: when the process has no file descriptor left, a
// store error says so instead of "cannot write parley.db".
func TestOutOfFilesSaysSo(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.r.SetMaxIdleConns(0) // every read opens the file anew
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Skip(err)
	}
	low := orig
	low.Cur = 256
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skip(err)
	}
	var held []*os.File
	defer func() {
		for _, f := range held {
			f.Close()
		}
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig)
	}()
	for len(held) < 1000 {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		held = append(held, f)
	}
	_, err = db.History(ctx, "ws", hub.HistoryQuery{})
	for _, f := range held {
		f.Close()
	}
	held = nil
	if err == nil || !strings.Contains(err.Error(), "run out of file descriptors") || strings.Contains(err.Error(), "cannot write") {
		t.Errorf("out of files: got %v, want it said", err)
	}
	if hub.KindOf(err) != hub.Unavailable {
		t.Errorf("kind: got %v, want unavailable", hub.KindOf(err))
	}
	// With descriptors back, the store works.
	if _, err := db.History(ctx, "ws", hub.HistoryQuery{}); err != nil {
		t.Errorf("after: %v", err)
	}
}
