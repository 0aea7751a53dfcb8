package postgres

import (
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// TestCreateMessageBatches: concurrent sends commit in shared statements, and
// each message reads back as it was sent, with its deliveries; a duplicate id
// in a batch fails that send alone.
func TestCreateMessageBatches(t *testing.T) {
	db := openTest(t)
	ctx := t.Context()
	const n = 128
	now := time.Now().UTC().Truncate(time.Microsecond)
	msgs := make([]*hub.Message, n)
	for i := range msgs {
		m := &hub.Message{ID: fmt.Sprintf("m%03d", i), Workspace: fmt.Sprint("ws", i%3), From: "alice", To: "@dev",
			Content: fmt.Sprint("body ", i), Priority: []hub.Priority{hub.Low, hub.Normal, hub.High, hub.Critical}[i%4],
			ThreadID: fmt.Sprintf("m%03d", i), CreatedAt: now.Add(time.Duration(i) * time.Millisecond)}
		if i%2 == 0 {
			m.Payload = json.RawMessage(fmt.Sprintf(`{"n": %d}`, i))
			m.Metadata = map[string]string{"k": fmt.Sprint(i)}
		}
		if i%5 == 0 {
			m.AckRequired, m.AckDeadline = true, now.Add(time.Hour)
		}
		msgs[i] = m
	}
	errs := make([]error, n+1)
	var wg sync.WaitGroup
	for i, m := range msgs {
		wg.Go(func() { errs[i] = db.CreateMessage(ctx, m, []string{"bob", "carol"}) })
	}
	// The same id again, at the same time: one of the two fails, alone.
	dup := *msgs[7]
	wg.Go(func() { errs[n] = db.CreateMessage(ctx, &dup, []string{"bob"}) })
	wg.Wait()
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			if hub.KindOf(err) != hub.Conflict || (i != 7 && i != n) {
				t.Errorf("send %d: %v (kind %s); want only one of the two sends of m007 to fail, as a conflict", i, err, hub.KindOf(err))
			}
		}
	}
	if failed != 1 {
		t.Errorf("%d sends failed, want 1 (the duplicate)", failed)
	}
	if db.sends.shared.Load() == 0 {
		t.Errorf("%d concurrent sends never shared a statement", n)
	}
	for _, want := range msgs {
		got, err := db.Message(ctx, want.Workspace, want.ID)
		if err != nil {
			t.Fatalf("Message %s: %v", want.ID, err)
		}
		if got.Content != want.Content || got.Priority != want.Priority || string(got.Payload) != string(want.Payload) ||
			!maps.Equal(got.Metadata, want.Metadata) || !got.CreatedAt.Equal(want.CreatedAt) ||
			got.AckRequired != want.AckRequired || !got.AckDeadline.Equal(want.AckDeadline) || got.ThreadID != want.ThreadID {
			t.Errorf("message %s: got %+v, want %+v", want.ID, got, want)
		}
	}
	for ws := range 3 {
		for _, r := range []string{"bob", "carol"} {
			if u, err := db.Unread(ctx, fmt.Sprint("ws", ws), r, hub.Low.Rank()); err != nil || u < n/3 {
				t.Errorf("Unread(ws%d, %s): got %d, %v; want at least %d", ws, r, u, err, n/3)
			}
		}
	}
}

// TestSendMessageReadsRecipients: SendMessage returns the agents of the
// recipients that exist, each send its own, also when concurrent sends share
// a batch; and the hub reports presence from them.
func TestSendMessageReadsRecipients(t *testing.T) {
	db := openTest(t)
	ctx := t.Context()
	now := time.Now().UTC()
	for i := range 8 {
		a := &hub.Agent{Workspace: "ws", Name: fmt.Sprint("r", i), Role: fmt.Sprint("role", i), Status: hub.StatusReady, LastSeen: now}
		if err := db.PutAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	const n = 64
	got := make([][]*hub.Agent, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		m := &hub.Message{ID: fmt.Sprintf("m%03d", i), Workspace: "ws", From: "alice", To: "x", Content: "hi", Priority: hub.Normal}
		m.ThreadID = m.ID
		// r(i%8) exists, ghost does not, and a queue is no agent.
		to := []string{fmt.Sprint("r", i%8), "ghost", "queue:jobs"}
		wg.Go(func() { got[i], errs[i] = db.SendMessage(ctx, m, to) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("send %d: %v", i, errs[i])
		}
		want := fmt.Sprint("r", i%8)
		if len(got[i]) != 1 || got[i][0].Name != want || got[i][0].Role != fmt.Sprint("role", i%8) || !got[i][0].LastSeen.Equal(now.Truncate(time.Microsecond)) {
			t.Errorf("send %d: got agents %v, want only %s as stored", i, got[i], want)
		}
	}

	h := hub.New(db, nil)
	old := &hub.Agent{Workspace: "ws", Name: "sleeper", Status: hub.StatusReady, LastSeen: now.Add(-time.Hour)}
	if err := db.PutAgent(ctx, old); err != nil {
		t.Fatal(err)
	}
	res, err := h.Send(ctx, hub.SendRequest{Workspace: "ws", From: "alice", To: "r1", Content: "hi"})
	if err != nil || len(res.Presence) != 1 || res.Presence[0] != hub.PresenceActive {
		t.Errorf("send to r1, seen just now: %+v, %v; want active", res, err)
	}
	if res, err = h.Send(ctx, hub.SendRequest{Workspace: "ws", From: "alice", To: "sleeper", Content: "hi"}); err != nil || res.Presence[0] != hub.PresenceOffline {
		t.Errorf("send to sleeper, seen an hour ago: %+v, %v; want offline", res, err)
	}
	if res, err = h.Send(ctx, hub.SendRequest{Workspace: "ws", From: "alice", To: "ghost", Content: "hi"}); err != nil || res.Presence[0] != hub.PresenceUnregistered {
		t.Errorf("send to ghost: %+v, %v; want unregistered", res, err)
	}
}
