package ops

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/store/sqlite"
)

// TestFailedLogsInternalOnce: an operation that fails inside (here its
// store is gone) is logged once by the door that writes the error, with
// the operation; an error of the caller's (invalid) and a call its client
// cancelled are not logged.
func TestFailedLogsInternalOnce(t *testing.T) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	o := New(hub.New(db, nil), &Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	ctx := context.Background()
	c := &Caller{Workspace: "w", Agent: "alice"}
	if _, err := Peek.Call(ctx, o, c, Peek.NewInput()); err != nil {
		t.Fatalf("peek with the store up: %v", err)
	}
	db.Close()
	_, err = Peek.Call(ctx, o, c, Peek.NewInput())
	if hub.KindOf(err) != hub.Internal {
		t.Fatalf("peek with the store closed: %v (kind %v), want an internal error", err, hub.KindOf(err))
	}
	o.Failed(ctx, Peek.Name, err)
	o.Failed(ctx, Send.Name, hub.Errorf("send_message", hub.Invalid, "no recipient"))
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	o.Failed(cancelled, Peek.Name, err)
	if n := strings.Count(logged.String(), "internal error"); n != 1 || !strings.Contains(logged.String(), "op=Peek") {
		t.Errorf("log: %q; want the internal error once, with its operation", logged.String())
	}
}
