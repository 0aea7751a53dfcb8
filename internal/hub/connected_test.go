package hub_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

func TestConnected(t *testing.T) {
	h := newHub(t, nil)
	if h.Connected("w", "a") {
		t.Fatal("Connected before any session: got true, want false")
	}
	h.SessionOpened("w", "a")
	if !h.Connected("w", "a") || h.Connected("other", "a") {
		t.Errorf("with a session in w: got w %v, other %v; want true, false", h.Connected("w", "a"), h.Connected("other", "a"))
	}
	h.SessionClosed("w", "a")
	if h.Connected("w", "a") {
		t.Error("after the session closed: got true, want false")
	}
}

func TestConnectedWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(t, nil)
		// A blocked wait counts while it blocks.
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			h.Wait(ctx, hub.WaitRequest{Workspace: "w", Agent: "b", Timeout: time.Minute})
			close(done)
		}()
		synctest.Wait()
		if h.Waiters("w", "b") != 1 || !h.Connected("w", "b") {
			t.Errorf("during a blocked wait: got %d waiters, connected %v; want 1, true", h.Waiters("w", "b"), h.Connected("w", "b"))
		}
		cancel()
		<-done
		if h.Connected("w", "b") {
			t.Error("after the wait ended: got true, want false")
		}
	})
}
