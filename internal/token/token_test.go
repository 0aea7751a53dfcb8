package token_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/store/sqlite"
	"github.com/parley-dev/parley/internal/token"
)

// TestWatcher: what is open under a token ends when it is revoked (once,
// and only what is still open); what starts under a token revoked already
// ends at once; Check ends what is open under tokens the store no longer has.
func TestWatcher(t *testing.T) {
	var w token.Watcher
	ended := map[string]int{}
	end := func(name string) func() { return func() { ended[name]++ } }
	w.Watch("a", end("a1"))
	w.Watch("a", end("a2"))
	stop := w.Watch("a", end("a3 stopped"))
	w.Watch("b", end("b"))
	stop()
	w.Revoked("a")
	w.Revoked("a")
	if ended["a1"] != 1 || ended["a2"] != 1 || ended["a3 stopped"] != 0 || ended["b"] != 0 {
		t.Errorf("after revoking a twice: ended %v; want a1 and a2 once, nothing else", ended)
	}
	w.Watch("a", end("late"))
	if ended["late"] != 1 {
		t.Errorf("a watch of a token revoked already: ended %d times, want once, at once", ended["late"])
	}

	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	live, _, hash := token.New("w", "carol", "dev", time.Now())
	if err := db.CreateToken(ctx, live, hash); err != nil {
		t.Fatal(err)
	}
	w.Watch(live.ID, end("live"))
	if err := w.Check(ctx, db); err != nil {
		t.Fatal(err)
	}
	if ended["b"] != 1 || ended["live"] != 0 {
		t.Errorf("Check with only carol's token in the store: ended %v; want b's watch ended, carol's not", ended)
	}
	var nilWatcher *token.Watcher
	nilWatcher.Watch("x", end("nil"))()
}
