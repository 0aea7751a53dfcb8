package hub_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// An agent's working set: the task it claimed (not the one it finished, nor
// another's), its reservations, the reply it still waits for (until it
// comes), the acks it asked for, and its unread count.
func TestWorkingSet(t *testing.T) {
	ctx := context.Background()
	h := newHub(t, nil)
	for _, n := range []string{"lead", "dev", "other"} {
		join(t, h, "w", n, "dev")
	}
	send := func(r hub.SendRequest) *hub.Message {
		t.Helper()
		r.Workspace = "w"
		res, err := h.Send(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return res.Message
	}
	mine := send(hub.SendRequest{From: "lead", To: "queue:build", Content: "build the docs"})
	done := send(hub.SendRequest{From: "lead", To: "queue:build", Content: "build the site"})
	theirs := send(hub.SendRequest{From: "lead", To: "queue:build", Content: "build the app"})
	claim := func(agent, reader string) *hub.Delivery {
		t.Helper()
		d, err := h.Claim(ctx, hub.ClaimRequest{Workspace: "w", Agent: agent, Queue: "build", Reader: reader, Timeout: time.Second})
		if err != nil || d == nil {
			t.Fatalf("claim as %s: %v, %v", agent, d, err)
		}
		return d
	}
	devKey := hub.AgentClaimKey("w", "dev")
	if d := claim("dev", devKey); d.MessageID != mine.ID {
		t.Fatalf("first claim: got %s, want %s", d.MessageID, mine.ID)
	}
	claim("dev", devKey)
	if _, err := h.Complete(ctx, hub.CompleteRequest{Workspace: "w", Agent: "dev", Readers: []string{devKey}, TaskID: done.ID}); err != nil {
		t.Fatal(err)
	}
	claim("other", hub.AgentClaimKey("w", "other"))
	if _, err := h.Reserve(ctx, hub.ReserveRequest{Workspace: "w", Agent: "dev", Paths: []string{"docs/**"}, Exclusive: true, Reason: "rewriting"}); err != nil {
		t.Fatal(err)
	}
	question := send(hub.SendRequest{From: "dev", To: "lead", Content: "which theme?"})
	if d, err := h.WaitForReply(ctx, hub.ReplyWaitRequest{Workspace: "w", Agent: "dev", MessageID: question.ID, Timeout: 10 * time.Millisecond}); err != nil || d != nil {
		t.Fatalf("wait_for_reply with no reply: got %v, %v", d, err)
	}
	acked := send(hub.SendRequest{From: "dev", To: "other", Content: "heads up", AckRequired: true})
	send(hub.SendRequest{From: "lead", To: "dev", Content: "fyi"})

	w, err := h.Work(ctx, "w", "dev")
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Tasks) != 1 || w.Tasks[0].MessageID != mine.ID || w.Tasks[0].Message.Content != "build the docs" {
		t.Errorf("tasks: got %+v, want only %s (%s is done, %s is other's)", w.Tasks, mine.ID, done.ID, theirs.ID)
	}
	if len(w.Reservations) != 1 || w.Reservations[0].Pattern != "docs/**" {
		t.Errorf("reservations: got %+v", w.Reservations)
	}
	if len(w.Asks) != 2 || w.Asks[0].Kind != hub.AskReply || w.Asks[0].Message.ID != question.ID ||
		w.Asks[1].Kind != hub.AskAck || w.Asks[1].Message.ID != acked.ID || len(w.Asks[1].Pending) != 1 {
		t.Errorf("asks: got %+v, want the question then the ack", w.Asks)
	}
	if w.Unread != 1 {
		t.Errorf("unread: got %d, want 1 (fyi)", w.Unread)
	}

	// A third agent's word in the thread is no answer; lead's is.
	send(hub.SendRequest{From: "other", To: "dev", Content: "not me", ReplyTo: question.ID})
	if w, _ := h.Work(ctx, "w", "dev"); len(w.Asks) != 2 {
		t.Errorf("after another's message in the thread: got %d asks, want the question still", len(w.Asks))
	}
	send(hub.SendRequest{From: "lead", To: "dev", Content: "the dark one", ReplyTo: question.ID})
	if _, err := h.Ack(ctx, "w", "other", []string{acked.ID}); err != nil {
		t.Fatal(err)
	}
	if w, _ := h.Work(ctx, "w", "dev"); len(w.Asks) != 0 {
		t.Errorf("after the reply and the ack: got asks %+v, want none", w.Asks)
	}
}
