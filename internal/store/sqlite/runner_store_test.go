package sqlite

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/runner"
)

// TestRunnerStore round-trips the runner's records and survives a reopen.
func TestRunnerStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "parley.db")
	db, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	for i, id := range []string{"b", "a"} {
		a := &runner.Agent{ID: id, Workspace: "ws", Provider: "claude", Title: "t", CreatedAt: now.Add(time.Duration(i) * time.Second)}
		if err := db.PutManagedAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	upd := &runner.Agent{ID: "b", Workspace: "ws", Provider: "claude", Title: "renamed", SessionID: "s1", CreatedAt: now}
	if err := db.PutManagedAgent(ctx, upd); err != nil {
		t.Fatal(err)
	}
	code := 0
	runs := []*runner.Run{
		{AgentID: "b", Seq: 1, State: runner.RunCompleted, Prompt: "one", ExitCode: &code, Usage: json.RawMessage(`{"input_tokens":1}`)},
		{AgentID: "b", Seq: 2, State: runner.RunRunning, Prompt: "two", PID: 42},
		{AgentID: "b", Seq: 3, State: runner.RunQueued, Prompt: "three"},
		{AgentID: "a", Seq: 1, State: runner.RunQueued, Prompt: "a1"},
	}
	for _, r := range runs {
		if err := db.PutRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	runs[0].State = runner.RunFailed
	if err := db.PutRun(ctx, runs[0]); err != nil {
		t.Fatal(err)
	}
	var evs []*runner.Event
	for i := 1; i <= 7; i++ {
		evs = append(evs, &runner.Event{AgentID: "b", Seq: int64(i), Run: 1, Kind: "text", Text: "e", Time: now})
	}
	if err := db.AppendEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendEvents(ctx, evs[:1]); err == nil {
		t.Errorf("appending seq 1 twice: got no error, want a conflict")
	}
	db.Close()

	db, err = Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	as, err := db.ManagedAgents(ctx)
	if err != nil || len(as) != 2 || as[0].ID != "b" || as[0].Title != "renamed" || as[0].SessionID != "s1" || as[1].ID != "a" {
		t.Fatalf("ManagedAgents: got %+v, %v; want b (updated) then a", as, err)
	}
	got, err := db.Runs(ctx, "b", 2)
	if err != nil || len(got) != 2 || got[0].Seq != 3 || got[1].Seq != 2 || got[1].PID != 42 {
		t.Fatalf("Runs(b, 2): got %+v, %v; want 3 then 2", got, err)
	}
	all, _ := db.Runs(ctx, "b", 0)
	if len(all) != 3 || all[2].State != runner.RunFailed || *all[2].ExitCode != 0 || string(all[2].Usage) != `{"input_tokens":1}` {
		t.Errorf("run 1 after update: got %+v", all[2])
	}
	open, err := db.OpenRuns(ctx)
	if err != nil || len(open) != 3 || open[0].AgentID != "a" || open[1].Seq != 2 || open[2].Seq != 3 {
		t.Errorf("OpenRuns: got %+v, %v; want a/1, b/2, b/3", open, err)
	}
	page, total, err := db.Events(ctx, "b", 2, 3)
	if err != nil || total != 7 || len(page) != 3 || page[0].Seq != 3 || page[2].Seq != 5 {
		t.Errorf("Events(b, 2, 3): got %d events from %v, total %d, %v; want 3..5 of 7", len(page), page, total, err)
	}
	if _, total, _ := db.Events(ctx, "a", 0, 10); total != 0 {
		t.Errorf("Events of an agent without any: total %d, want 0", total)
	}
}
