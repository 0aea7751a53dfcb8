package permission_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/parley-dev/parley/internal/permission"
	"github.com/parley-dev/parley/internal/permission/permtest"
	"github.com/parley-dev/parley/internal/store/sqlite"
)

func open(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestInboxOnSQLite(t *testing.T) {
	permtest.Run(t, func(t *testing.T) permission.Store { return open(t, filepath.Join(t.TempDir(), "p.db")) })
}

func req(agent string) permission.Request {
	return permission.Request{Workspace: "w", Agent: agent, Source: permission.SourceClaudeHook, Tool: "Bash", Input: json.RawMessage(`{"command":"make"}`)}
}

func TestPersisted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	in := permission.New(open(t, path), nil)
	ctx := context.Background()
	r, err := in.File(ctx, req("erin"))
	if err != nil {
		t.Fatal(err)
	}
	again := permission.New(open(t, path), nil)
	p, err := again.Pending(ctx, "w")
	if err != nil || len(p) != 1 || p[0].ID != r.ID || string(p[0].Input) != `{"command":"make"}` || p[0].Source != permission.SourceClaudeHook {
		t.Fatalf("pending after reopening: %v %+v", err, p)
	}
	if p, _ := again.Pending(ctx, "other"); len(p) != 0 {
		t.Errorf("another workspace sees %d requests", len(p))
	}
}
