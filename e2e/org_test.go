package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/store/postgres/pgtest"
)

// TestPostgresAutoWakeAcrossDaemons: a managed agent with auto-wake on daemon
// B starts a run for a message sent through daemon A, and B's live event
// stream (the dashboard's feed) shows the message and the run as they
// happen. Before events crossed daemons, only B's waiters heard of A's send.
func TestPostgresAutoWakeAcrossDaemons(t *testing.T) {
	a, b := pgEnvs(t, pgtest.Database(t))
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	ca, cb := pgClient(t, a, "alice"), pgClient(t, b, "")
	if _, err := cb.CreateManagedAgent(ctx, api.CreateManagedAgentRequest{Provider: "command", Cwd: t.TempDir(),
		Command: "echo handled {prompt}", Name: "builder", Title: "build on B"}); err != nil {
		t.Fatal(err)
	}
	a.Must("join", "--name", "alice", "--role", "lead")

	stream, err := cb.Events(ctx, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	sent, err := ca.Send(ctx, api.SendRequest{To: "builder", Content: "compile the docs"})
	if err != nil {
		t.Fatal(err)
	}
	// B's stream: A's send, then builder's run as B starts it.
	var sawSent, sawRunning bool
	var kinds []string
	for !(sawSent && sawRunning) {
		e, _, err := stream.Next(ctx)
		if err != nil {
			t.Fatalf("B's event stream after %v: %v", kinds, err)
		}
		kinds = append(kinds, e.Kind+" "+e.Agent+" "+e.Status)
		switch {
		case e.Kind == "message.sent" && e.ID == sent.MessageID:
			if e.From != "alice" || e.Preview != "compile the docs" {
				t.Errorf("message.sent on B: got %+v, want alice's message", e)
			}
			sawSent = true
		case e.Kind == api.EventManagedStatus && e.Agent == "builder" && e.Status == "running":
			if !sawSent {
				t.Errorf("builder ran before B's stream told of the message: %v", kinds)
			}
			sawRunning = true
		}
	}
	waitUntil(t, "builder's run on B to end with the message as its prompt", func() bool {
		act, err := cb.AgentActivity(ctx, "builder", 0, 50)
		return err == nil && strings.Contains(act.Content, "handled") && strings.Contains(act.Content, "compile the docs")
	})
	// A sees the run B started, live too: managed state crosses daemons.
	sa, err := ca.Events(ctx, true, []string{api.EventManagedStatus, api.EventRunEvent})
	if err != nil {
		t.Fatal(err)
	}
	defer sa.Close()
	if _, err := ca.Send(ctx, api.SendRequest{To: "builder", Content: "and again"}); err != nil {
		t.Fatal(err)
	}
	for {
		e, _, err := sa.Next(ctx)
		if err != nil {
			t.Fatalf("A's event stream: %v", err)
		}
		if e.Kind == api.EventManagedStatus && e.Agent == "builder" && e.Status == "running" {
			break
		}
	}
}
