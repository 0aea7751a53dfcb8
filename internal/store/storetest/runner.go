package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/runner"
)

// runRunner runs the contract of runner.Store: managed agents, runs and
// timelines. open must return a new, empty store for each call; the caller
// closes it.
func runRunner(t *testing.T, open func(t *testing.T) runner.Store) {
	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		testRunnerRoundTrip(t, open(t))
	})
}

func testRunnerRoundTrip(t *testing.T, s runner.Store) {
	c := ctx(t)
	now := t0.Truncate(time.Microsecond)
	if as, err := s.ManagedAgents(c); err != nil || len(as) != 0 {
		t.Fatalf("ManagedAgents of an empty store: got %v, %v; want none", as, err)
	}
	for i, id := range []string{"b", "a"} {
		a := &runner.Agent{ID: id, Workspace: "ws", Provider: "claude", Title: "t", CreatedAt: now.Add(time.Duration(i) * time.Second)}
		if err := s.PutManagedAgent(c, a); err != nil {
			t.Fatal(err)
		}
	}
	upd := &runner.Agent{ID: "b", Workspace: "ws", Provider: "claude", Title: "renamed", SessionID: "s1", CreatedAt: now}
	if err := s.PutManagedAgent(c, upd); err != nil {
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
		if err := s.PutRun(c, r); err != nil {
			t.Fatal(err)
		}
	}
	runs[0].State = runner.RunFailed
	if err := s.PutRun(c, runs[0]); err != nil {
		t.Fatal(err)
	}
	var evs []*runner.Event
	for i := 1; i <= 7; i++ {
		evs = append(evs, &runner.Event{AgentID: "b", Seq: int64(i), Run: 1, Kind: "text", Text: "e", Time: now})
	}
	if err := s.AppendEvents(c, evs); err != nil {
		t.Fatal(err)
	}
	// All or none: seq 8 is new, but seq 1 is there already.
	dup := []*runner.Event{{AgentID: "b", Seq: 8, Run: 1, Kind: "text", Text: "e", Time: now}, evs[0]}
	if err := s.AppendEvents(c, dup); err == nil {
		t.Errorf("appending seq 1 twice: got no error, want a conflict")
	}

	as, err := s.ManagedAgents(c)
	if err != nil || len(as) != 2 || as[0].ID != "b" || as[0].Title != "renamed" || as[0].SessionID != "s1" || as[1].ID != "a" {
		t.Fatalf("ManagedAgents: got %+v, %v; want b (updated) then a", as, err)
	}
	got, err := s.Runs(c, "b", 2)
	if err != nil || len(got) != 2 || got[0].Seq != 3 || got[1].Seq != 2 || got[1].PID != 42 {
		t.Fatalf("Runs(b, 2): got %+v, %v; want 3 then 2", got, err)
	}
	all, err := s.Runs(c, "b", 0)
	if err != nil || len(all) != 3 || all[2].State != runner.RunFailed || *all[2].ExitCode != 0 || string(all[2].Usage) != `{"input_tokens":1}` {
		t.Errorf("Runs(b, 0): got %+v, %v; want 3 runs, the oldest updated to failed with its usage kept exactly", all, err)
	}
	open, err := s.OpenRuns(c)
	if err != nil || len(open) != 3 || open[0].AgentID != "a" || open[1].Seq != 2 || open[2].Seq != 3 {
		t.Errorf("OpenRuns: got %+v, %v; want a/1, b/2, b/3", open, err)
	}
	page, total, err := s.Events(c, "b", 2, 3)
	if err != nil || total != 7 || len(page) != 3 || page[0].Seq != 3 || page[2].Seq != 5 {
		t.Errorf("Events(b, 2, 3): got %d events from %v, total %d, %v; want 3..5 of 7", len(page), page, total, err)
	}
	if _, total, err := s.Events(c, "a", 0, 10); err != nil || total != 0 {
		t.Errorf("Events of an agent without any: total %d, %v; want 0", total, err)
	}
}
