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
	if db.sends.batches.Load() == 0 {
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
