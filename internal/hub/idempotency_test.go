package hub_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// TestIdempotentSend: a retry with the key returns the first send's result
// and stores nothing new; a different send with the key, or a key older than
// the window, is refused; keys are the sender's own.
func TestIdempotentSend(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	h := newHub(t, &hub.Options{Now: func() time.Time { return now }})
	req := hub.SendRequest{Workspace: "w", From: "alice", To: "bob", Content: "deploy", IdempotencyKey: "deploy-1"}
	first, err := h.Send(ctx, req)
	if err != nil || first.Replayed {
		t.Fatalf("first send: %+v, %v", first, err)
	}
	again, err := h.Send(ctx, req)
	if err != nil || !again.Replayed || again.Message.ID != first.Message.ID || len(again.Recipients) != 1 || again.Recipients[0] != "bob" {
		t.Fatalf("retry: got %+v, %v; want the first result, replayed", again, err)
	}
	if n, _ := h.Unread(ctx, "w", "bob"); n != 1 {
		t.Errorf("bob's inbox after a retry: %d, want 1", n)
	}
	other := req
	other.Content = "something else"
	if _, err := h.Send(ctx, other); hub.KindOf(err) != hub.Conflict {
		t.Errorf("another send with the key: got %v, want a conflict", err)
	}
	carol := req
	carol.From = "carol"
	if res, err := h.Send(ctx, carol); err != nil || res.Replayed {
		t.Errorf("carol's send with alice's key: %+v, %v; want a send of its own", res, err)
	}
	if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "alice", To: "bob", Content: "x", IdempotencyKey: "bad\x00key"}); hub.KindOf(err) != hub.Invalid {
		t.Errorf("a key with a control character: got %v, want invalid", err)
	}
	now = now.Add(hub.IdempotencyWindow + time.Minute)
	if _, err := h.Send(ctx, req); hub.KindOf(err) != hub.Conflict {
		t.Errorf("a retry after the window: got %v, want a conflict asking for a new key", err)
	}
}

// TestIdempotentComplete: completing a task again with the key returns the
// first result (not "completed already"), and sends no second reply.
func TestIdempotentComplete(t *testing.T) {
	ctx := context.Background()
	h := newHub(t, nil)
	task, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "boss", To: "queue:build", Content: "build"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Claim(ctx, hub.ClaimRequest{Workspace: "w", Agent: "worker", Queue: "build", Reader: "r1", Timeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	req := hub.CompleteRequest{Workspace: "w", Agent: "worker", Readers: []string{"r1"}, TaskID: task.Message.ID, Result: "built", IdempotencyKey: "done-1"}
	first, err := h.Complete(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := h.Complete(ctx, req)
	if err != nil || !again.Replayed || again.Reply.ID != first.Reply.ID {
		t.Fatalf("retry: got %+v, %v; want the first result", again, err)
	}
	req.IdempotencyKey = ""
	if _, err := h.Complete(ctx, req); hub.KindOf(err) != hub.Conflict {
		t.Errorf("a retry without the key: got %v, want completed already", err)
	}
	if n, _ := h.Unread(ctx, "w", "boss"); n != 1 {
		t.Errorf("boss's inbox: %d results, want 1", n)
	}
}

// TestIdempotentSendAfterPurge: a purge that takes every read message (a
// retention shorter than a day) keeps the keyed one until its window ends,
// so a retry within the window still sends nothing.
func TestIdempotentSendAfterPurge(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	h := newHub(t, &hub.Options{Now: func() time.Time { return now }})
	req := hub.SendRequest{Workspace: "w", From: "alice", To: "bob", Content: "deploy", IdempotencyKey: "deploy-1"}
	first, err := h.Send(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "alice", To: "bob", Content: "no key"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ClearInbox(ctx, "w", "bob"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	if res, err := h.Purge(ctx, now.Add(-time.Minute)); err != nil || res.Messages != 1 {
		t.Fatalf("purge of what is older than a minute: %+v, %v; want the message without a key only", res, err)
	}
	again, err := h.Send(ctx, req)
	if err != nil || !again.Replayed || again.Message.ID != first.Message.ID {
		t.Fatalf("retry an hour later, after the purge: %+v, %v; want the first send, replayed", again, err)
	}
	if n, _ := h.Unread(ctx, "w", "bob"); n != 0 {
		t.Errorf("bob's inbox after the retry: %d unread, want 0 (nothing sent again)", n)
	}
	now = now.Add(hub.IdempotencyWindow)
	if res, err := h.Purge(ctx, now.Add(-time.Minute)); err != nil || res.Messages != 1 {
		t.Errorf("purge after the key's window: %+v, %v; want the keyed message gone", res, err)
	}
}
