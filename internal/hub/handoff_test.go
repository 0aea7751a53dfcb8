package hub_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// next starts a wait of agent b for reader in the background and returns
// where its outcome arrives.
func next(ctx context.Context, h *hub.Hub, reader string, r hub.WaitRequest) <-chan *hub.Delivery {
	out := make(chan *hub.Delivery, 1)
	r.Workspace, r.Agent, r.Reader = "w", "b", hub.KeyedReader(h, reader)
	if r.Timeout == 0 {
		r.Timeout = time.Minute
	}
	go func() {
		d, _ := h.Next(ctx, r)
		out <- d
	}()
	return out
}

// stillWaiting fails the test if the wait that reports on got has ended.
func stillWaiting(t *testing.T, got <-chan *hub.Delivery, what string) {
	t.Helper()
	synctest.Wait()
	select {
	case d := <-got:
		t.Fatalf("%s: got %v, want it still waiting", what, d)
	default:
	}
}

// sendReaches sends content to b and checks that the wait that reports on got
// receives it.
func sendReaches(t *testing.T, h *hub.Hub, got <-chan *hub.Delivery, content, what string) {
	t.Helper()
	m := send(t, h, "a", "b", content)
	if d := <-got; d == nil || d.MessageID != m.ID {
		t.Errorf("%s: got %v, want %s", what, d, content)
	}
}

// TestHandoff: a send hands its message to the wait parked on the inbox, as
// that wait's take would have (leased to its reader, its wake path, one
// delivery event after the sent one), without a take; a wait whose filter
// the message does not pass is left waiting, and the message queued.
func TestHandoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		h, st := newGated(t)
		var kinds []hub.EventKind
		h.Subscribe(func(e hub.Event) {
			if e.Kind == hub.EventMessageSent || e.Kind == hub.EventMessageDelivered {
				kinds = append(kinds, e.Kind)
			}
		})
		got := next(ctx, h, "s1", hub.WaitRequest{Via: hub.WakeChannel})
		synctest.Wait()
		m := send(t, h, "a", "b", "hello")
		d := <-got
		if d == nil || d.MessageID != m.ID || d.Message.Content != "hello" || d.State != hub.Delivered ||
			d.Reader != "s1" || d.Count != 1 || d.WokeVia != hub.WakeChannel || d.LeaseUntil.Sub(d.DeliveredAt) != hub.DefaultLease {
			t.Fatalf("handed delivery: got %+v, want hello delivered to s1, count 1, via channel, leased for %v", d, hub.DefaultLease)
		}
		if sd := state(t, h, m, "b"); sd.State != hub.Delivered || sd.Reader != "s1" || sd.Count != 1 || sd.WokeVia != hub.WakeChannel {
			t.Errorf("stored copy: got %+v, want delivered to s1 via channel", sd)
		}
		if n := st.takes.Load(); n != 0 {
			t.Errorf("takes: got %d, want 0", n)
		}
		if want := []hub.EventKind{hub.EventMessageSent, hub.EventMessageDelivered}; !slices.Equal(kinds, want) {
			t.Errorf("events: got %v, want %v", kinds, want)
		}

		// A wait for urgent mail only is not handed a normal message.
		got = next(ctx, h, "s2", hub.WaitRequest{Filter: hub.PriorityFilter{Min: hub.High}})
		synctest.Wait()
		low := send(t, h, "a", "b", "not urgent")
		stillWaiting(t, got, "urgent-only wait")
		if sd := state(t, h, low, "b"); sd.State != hub.Queued {
			t.Errorf("message the wait does not take: got %s, want queued", sd.State)
		}
		urgent, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "urgent", Priority: "high"})
		if err != nil {
			t.Fatal(err)
		}
		if d := <-got; d == nil || d.MessageID != urgent.Message.ID {
			t.Errorf("urgent-only wait: got %v, want the urgent message", d)
		}
		// One look, after the wake-up of the message it does not take.
		if n := st.takes.Load(); n != 1 {
			t.Errorf("takes: got %d, want 1", n)
		}
	})
}

// TestHandoffOneWaitPerCopy: two waits of one agent, one message: one wait
// gets it, the other keeps waiting for the next.
func TestHandoffOneWaitPerCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		h := newHub(t, nil)
		a := next(ctx, h, "s1", hub.WaitRequest{})
		b := next(ctx, h, "s2", hub.WaitRequest{})
		synctest.Wait()
		m1 := send(t, h, "x", "b", "one")
		synctest.Wait()
		var d *hub.Delivery
		second := b
		select {
		case d = <-a:
		case d = <-b:
			second = a
		default:
			t.Fatal("no wait got the message")
		}
		if d == nil || d.MessageID != m1.ID {
			t.Fatalf("first wait: got %v, want one", d)
		}
		stillWaiting(t, second, "second wait")
		sendReaches(t, h, second, "two", "second wait")
	})
}

// TestHandoffRaces: a wait that a send holds (between its claim and its
// commit) takes the send's outcome whatever happens meanwhile: it ends with
// the message at its timeout; a cancelled one puts the message back, marked,
// never lost; a failed send leaves it waiting; another send's wake-up does
// not make it take the other message first.
func TestHandoffRaces(t *testing.T) {
	// held starts a wait of b for s1, then a send of content that claims
	// the wait and stops at the store's gate.
	held := func(t *testing.T, ctx context.Context, r hub.WaitRequest, content string) (*hub.Hub, *gatedStore, <-chan *hub.Delivery, <-chan error) {
		h, st := newGated(t)
		got := next(ctx, h, "s1", r)
		synctest.Wait()
		st.gate = make(chan error)
		errc := make(chan error, 1)
		go func() {
			_, err := h.Send(context.Background(), hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: content})
			errc <- err
		}()
		synctest.Wait() // the send has claimed the wait and waits at the gate
		return h, st, got, errc
	}

	t.Run("timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			_, st, got, errc := held(t, context.Background(), hub.WaitRequest{Timeout: time.Second}, "late")
			time.Sleep(2 * time.Second) // past the wait's timeout, in the bubble's clock
			synctest.Wait()
			st.gate <- nil
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if d := <-got; d == nil || d.Message.Content != "late" || d.State != hub.Delivered {
				t.Errorf("wait that timed out while held: got %+v, want the message, delivered", d)
			}
		})
	})

	t.Run("cancelled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			h, st, got, errc := held(t, ctx, hub.WaitRequest{}, "orphan")
			cancel()
			synctest.Wait()
			st.gate <- nil
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if d := <-got; d != nil {
				t.Errorf("cancelled wait: got %v, want nothing", d.Message)
			}
			st.gate = nil
			d, err := h.Next(context.Background(), hub.WaitRequest{Workspace: "w", Agent: "b", Reader: hub.KeyedReader(h, "s2"), Timeout: time.Second})
			if err != nil || d == nil || d.Message.Content != "orphan" || !d.Repeat() || d.Count != 2 {
				t.Errorf("next wait: got %+v, %v; want orphan again, marked as a repeat (count 2)", d, err)
			}
		})
	})

	t.Run("send fails", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h, st, got, errc := held(t, context.Background(), hub.WaitRequest{}, "lost")
			st.gate <- hub.Errorf("", hub.Unavailable, "disk on fire")
			if err := <-errc; hub.KindOf(err) != hub.Unavailable {
				t.Fatalf("send: got %v, want the store's error", err)
			}
			st.gate = nil
			stillWaiting(t, got, "wait after a failed send")
			sendReaches(t, h, got, "next", "wait after a failed send")
		})
	})

	t.Run("woken while held", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h, st, got, errc := held(t, context.Background(), hub.WaitRequest{}, "first")
			// A second send finds the wait held: it queues its message
			// and wakes the wait, which still takes the first.
			gate := st.gate
			st.gate = nil
			second := send(t, h, "a", "b", "second")
			synctest.Wait()
			gate <- nil
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if d := <-got; d == nil || d.Message.Content != "first" {
				t.Errorf("held wait: got %v, want first", d)
			}
			if sd := state(t, h, second, "b"); sd.State != hub.Queued {
				t.Errorf("second message: got %s, want queued", sd.State)
			}
			d, err := h.Next(context.Background(), hub.WaitRequest{Workspace: "w", Agent: "b", Reader: hub.KeyedReader(h, "s2"), Timeout: time.Second})
			if err != nil || d == nil || d.MessageID != second.ID || d.Repeat() {
				t.Errorf("next wait: got %+v, %v; want second, first time", d, err)
			}
		})
	})
}

// TestHandoffBroadcast: one message to several agents is handed to the wait
// of each agent that waits, and queued for the one that does not.
func TestHandoffBroadcast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		h, st := newGated(t)
		for _, n := range []string{"a", "b", "c", "d"} {
			join(t, h, "w", n, "dev")
		}
		waits := map[string]<-chan *hub.Message{}
		for _, n := range []string{"b", "c"} {
			got := make(chan *hub.Message, 1)
			go func() {
				m, _ := h.Wait(ctx, hub.WaitRequest{Workspace: "w", Agent: n, Reader: hub.KeyedReader(h, "s-"+n), Timeout: time.Minute})
				got <- m
			}()
			waits[n] = got
		}
		synctest.Wait()
		m := send(t, h, "a", "@everyone", "all hands")
		for n, got := range waits {
			if g := <-got; g == nil || g.ID != m.ID {
				t.Errorf("%s's wait: got %v, want the broadcast", n, g)
			}
			if d := state(t, h, m, n); d.State != hub.Delivered || d.Reader != "s-"+n {
				t.Errorf("%s's copy: got %+v, want delivered to s-%s", n, d, n)
			}
		}
		if d := state(t, h, m, "d"); d.State != hub.Queued {
			t.Errorf("d's copy (no wait): got %s, want queued", d.State)
		}
		if n := st.takes.Load(); n != 0 {
			t.Errorf("takes: got %d, want 0", n)
		}
	})
}
