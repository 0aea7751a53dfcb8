package hub_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/store/sqlite"
)

// gatedStore is a real SQLite store that counts its hand-outs, and whose
// sends, while gate is set, each wait for a value from it: nil stores the
// message, an error fails the send. It lets a test hold a send between its
// claim on a wait and its commit.
type gatedStore struct {
	hub.Store
	takes atomic.Int64
	gate  chan error
}

func (s *gatedStore) Take(ctx context.Context, q hub.TakeQuery) (taken, confirmed []*hub.Delivery, err error) {
	s.takes.Add(1)
	return s.Store.Take(ctx, q)
}

func (s *gatedStore) CreateMessage(ctx context.Context, m *hub.Message, recipients []string, handed ...hub.Handoff) error {
	if s.gate != nil {
		if err := <-s.gate; err != nil {
			return err
		}
	}
	return s.Store.CreateMessage(ctx, m, recipients, handed...)
}

func newGated(t *testing.T) (*hub.Hub, *gatedStore) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), t.TempDir()+"/parley.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := &gatedStore{Store: db}
	return hub.New(st, nil), st
}

// A wait that begins on an empty inbox does not take from it: the send that
// wakes it hands it the message in its own transaction, so the wake-up takes
// nothing either (a take queues on the store's one writer, behind the
// sends). A wait that begins with mail takes it at once.
func TestWaitTakesOnlyWhenThereIsMail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		h, st := newGated(t)

		got := make(chan *hub.Message, 1)
		go func() {
			m, err := h.Wait(ctx, hub.WaitRequest{Workspace: "w", Agent: "b", Timeout: 10 * time.Second})
			if err != nil {
				t.Error(err)
			}
			got <- m
		}()
		synctest.Wait()
		if n := h.Waiters("w", "b"); n != 1 {
			t.Fatalf("waiters: got %d, want 1", n)
		}
		if n := st.takes.Load(); n != 0 {
			t.Errorf("takes by a wait blocked on an empty inbox: got %d, want 0", n)
		}
		if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "one"}); err != nil {
			t.Fatal(err)
		}
		if m := <-got; m == nil || m.Content != "one" {
			t.Fatalf("woken wait: got %v, want message one", m)
		}
		if n := st.takes.Load(); n != 0 {
			t.Errorf("takes after a handed wake-up: got %d, want 0", n)
		}

		if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "two"}); err != nil {
			t.Fatal(err)
		}
		m, err := h.Wait(ctx, hub.WaitRequest{Workspace: "w", Agent: "b", Timeout: 10 * time.Second})
		if err != nil || m == nil || m.Content != "two" {
			t.Fatalf("wait with mail waiting: got %v, %v; want message two", m, err)
		}
		if n := st.takes.Load(); n != 1 {
			t.Errorf("takes after a wait that found mail: got %d, want 1", n)
		}
	})
}
