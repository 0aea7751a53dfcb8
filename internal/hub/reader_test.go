package hub_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// read takes b's next message for the reader in the call, as an operation
// does: the hub hands it out, and records it in the reader.
func read(t *testing.T, h *hub.Hub, r *hub.Reader, call string) *hub.Delivery {
	t.Helper()
	ctx := context.Background()
	ds, _, err := h.Receive(ctx, hub.ReceiveRequest{Workspace: "w", Agent: "b", Reader: r, Call: call, Limit: 1})
	if err != nil || len(ds) != 1 {
		t.Fatalf("read: got %d, %v; want one message", len(ds), err)
	}
	return ds[0]
}

// TestReaderNeverHoldsWhatItDidNotGet drives one copy through each way a door
// settles it, for each confirmation policy, and checks where it ends: read
// when the client is known to have it, back in the inbox (redelivered) when
// it is known not to, or still leased while nobody knows yet.
func TestReaderNeverHoldsWhatItDidNotGet(t *testing.T) {
	ctx := context.Background()
	lost := errors.New("write failed")
	tests := []struct {
		name   string
		policy hub.ConfirmPolicy
		steps  func(r *hub.Reader)
		want   hub.DeliveryState
	}{
		{"on write: written", hub.ConfirmOnWrite, func(r *hub.Reader) { r.Written(ctx, "1", nil) }, hub.Read},
		{"on write: the write failed", hub.ConfirmOnWrite, func(r *hub.Reader) { r.Written(ctx, "1", lost) }, hub.Redelivered},
		{"on write: not written yet", hub.ConfirmOnWrite, func(r *hub.Reader) {}, hub.Delivered},
		{"on receipt: written, no receipt", hub.ConfirmOnReceipt, func(r *hub.Reader) { r.Written(ctx, "1", nil) }, hub.Delivered},
		{"on receipt: received", hub.ConfirmOnReceipt, func(r *hub.Reader) {
			ids := r.HandedIn("1")
			r.Written(ctx, "1", nil)
			r.Receipt(ctx, ids, true)
		}, hub.Read},
		{"on receipt: received before the door saw it written", hub.ConfirmOnReceipt, func(r *hub.Reader) {
			r.Receipt(ctx, r.HandedIn("1"), true)
			r.Written(ctx, "1", nil)
			r.Lost(ctx)
		}, hub.Read},
		{"on receipt: given back", hub.ConfirmOnReceipt, func(r *hub.Reader) {
			ids := r.HandedIn("1")
			r.Written(ctx, "1", nil)
			r.Receipt(ctx, ids, false)
		}, hub.Redelivered},
		{"on receipt: closed unconfirmed", hub.ConfirmOnReceipt, func(r *hub.Reader) {
			r.Written(ctx, "1", nil)
			r.Close(ctx)
		}, hub.Redelivered},
		{"on receipt: closed in flight", hub.ConfirmOnReceipt, func(r *hub.Reader) { r.Close(ctx) }, hub.Redelivered},
		{"on receipt: lost", hub.ConfirmOnReceipt, func(r *hub.Reader) {
			r.Written(ctx, "1", nil)
			r.Lost(ctx)
		}, hub.Redelivered},
		{"next request: it came", hub.ConfirmOnNextRequest, func(r *hub.Reader) {
			r.Written(ctx, "1", nil)
			r.NextRequest(ctx)
		}, hub.Read},
		{"next request: not yet", hub.ConfirmOnNextRequest, func(r *hub.Reader) {
			r.Written(ctx, "1", nil)
		}, hub.Delivered},
		{"next request: the client hung up before the answer", hub.ConfirmOnNextRequest, func(r *hub.Reader) {
			r.Written(ctx, "1", lost)
			r.NextRequest(ctx)
		}, hub.Redelivered},
		{"next request: before the answer was written", hub.ConfirmOnNextRequest, func(r *hub.Reader) {
			r.NextRequest(ctx)
		}, hub.Delivered},
		{"next request: lost in flight, then written and asked again", hub.ConfirmOnNextRequest, func(r *hub.Reader) {
			r.Lost(ctx)
			r.Written(ctx, "1", nil)
			r.NextRequest(ctx)
		}, hub.Read},
		{"next request: lost after the answer", hub.ConfirmOnNextRequest, func(r *hub.Reader) {
			r.Written(ctx, "1", nil)
			r.Lost(ctx)
			r.NextRequest(ctx)
		}, hub.Redelivered},
		{"cancelled after it was confirmed", hub.ConfirmOnNextRequest, func(r *hub.Reader) {
			r.Written(ctx, "1", nil)
			r.NextRequest(ctx)
			r.Cancel(ctx, "1")
		}, hub.Redelivered},
		{"cancelled in flight", hub.ConfirmOnReceipt, func(r *hub.Reader) {
			r.Cancel(ctx, "1")
			r.Written(ctx, "1", nil)
		}, hub.Redelivered},
		{"on receipt: a next request says nothing", hub.ConfirmOnReceipt, func(r *hub.Reader) {
			r.Written(ctx, "1", nil)
			r.NextRequest(ctx)
		}, hub.Delivered},
		{"another call cancelled", hub.ConfirmOnWrite, func(r *hub.Reader) {
			r.Cancel(ctx, "2")
			r.Written(ctx, "1", nil)
		}, hub.Read},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHub(t, nil)
			m := send(t, h, "a", "b", "hello")
			r := h.OpenReader(hub.ReaderOptions{Workspace: "w", Agent: "b", Confirm: tc.policy})
			read(t, h, r, "1")
			tc.steps(r)
			if d := state(t, h, m, "b"); d.State != tc.want {
				t.Errorf("got %s, want %s", d.State, tc.want)
			}
		})
	}
}

// TestReaderCancelledBeforeKnown: a call that the client cancelled before the
// reader heard of it hands nothing out: what it is handed goes back at once.
func TestReaderCancelledBeforeKnown(t *testing.T) {
	ctx := context.Background()
	h := newHub(t, nil)
	m := send(t, h, "a", "b", "hello")
	r := h.OpenReader(hub.ReaderOptions{Workspace: "w", Agent: "b", Confirm: hub.ConfirmOnWrite})
	r.Cancel(ctx, "7")
	read(t, h, r, "7")
	r.Written(ctx, "7", nil)
	if d := state(t, h, m, "b"); d.State != hub.Redelivered {
		t.Fatalf("got %s, want redelivered at once", d.State)
	}
	// A later call of the same id is a new call.
	read(t, h, r, "7")
	r.Written(ctx, "7", nil)
	if d := state(t, h, m, "b"); d.State != hub.Read || d.Count != 2 {
		t.Errorf("got %s (count %d), want read at its second delivery", d.State, d.Count)
	}
}

// TestReaderRemembersRecentCalls: a cancellation reaches the last calls a
// reader settled, not older ones.
func TestReaderRemembersRecentCalls(t *testing.T) {
	ctx := context.Background()
	h := newHub(t, nil)
	r := h.OpenReader(hub.ReaderOptions{Workspace: "w", Agent: "b", Confirm: hub.ConfirmOnWrite})
	var ms []*hub.Message
	for i := range 20 {
		ms = append(ms, send(t, h, "a", "b", fmt.Sprint(i)))
		call := fmt.Sprint(i)
		read(t, h, r, call)
		r.Written(ctx, call, nil)
	}
	r.Cancel(ctx, "0")  // forgotten: 19 calls came after it
	r.Cancel(ctx, "19") // the latest
	r.Cancel(ctx, "")   // no call
	for i, want := range map[int]hub.DeliveryState{0: hub.Read, 1: hub.Read, 18: hub.Read, 19: hub.Redelivered} {
		if d := state(t, h, ms[i], "b"); d.State != want {
			t.Errorf("call %d: got %s, want %s", i, d.State, want)
		}
	}
}

// TestReaderClosedWhileWaiting: a reader that closes while a send hands its
// blocked wait a message does not keep it, whichever comes first.
func TestReaderClosedWhileWaiting(t *testing.T) {
	for _, closeFirst := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h := newHub(t, nil)
			r := h.OpenReader(hub.ReaderOptions{Workspace: "w", Agent: "b", Confirm: hub.ConfirmOnReceipt})
			got := make(chan *hub.Delivery, 1)
			go func() {
				d, _ := h.Next(ctx, hub.WaitRequest{Workspace: "w", Agent: "b", Reader: r, Call: "1", Timeout: time.Minute})
				got <- d
			}()
			synctest.Wait()
			if closeFirst {
				r.Close(ctx)
			}
			m := send(t, h, "a", "b", "hello")
			d := <-got
			if !closeFirst {
				r.Close(ctx)
			}
			if d == nil {
				t.Fatalf("close first %v: the wait got nothing", closeFirst)
			}
			if st := state(t, h, m, "b"); st.State != hub.Redelivered {
				t.Errorf("close first %v: got %s, want redelivered", closeFirst, st.State)
			}
		})
	}
}

// TestReaderLeaseRunsOut: a client that neither confirms nor goes away gives
// its messages back when the reader's lease runs out.
func TestReaderLeaseRunsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		h := newHub(t, &hub.Options{SweepEvery: time.Second})
		running(t, h)
		m := send(t, h, "a", "b", "hello")
		r := h.OpenReader(hub.ReaderOptions{Workspace: "w", Agent: "b", Confirm: hub.ConfirmOnReceipt, Lease: time.Minute})
		read(t, h, r, "1")
		r.Written(ctx, "1", nil)
		time.Sleep(59 * time.Second)
		synctest.Wait()
		if d := state(t, h, m, "b"); d.State != hub.Delivered {
			t.Fatalf("within the lease: got %s, want delivered", d.State)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if d := state(t, h, m, "b"); d.State != hub.Redelivered {
			t.Errorf("past the lease: got %s, want redelivered", d.State)
		}
	})
}

// TestReaderClaims: a reader that is lost gives back the tasks it claimed; a
// reader of one request holds its claims for its agent, and keeps them.
func TestReaderClaims(t *testing.T) {
	ctx := context.Background()
	for _, oneRequest := range []bool{false, true} {
		h := newHub(t, nil)
		if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "queue:jobs", Content: "job"}); err != nil {
			t.Fatal(err)
		}
		r := h.OpenReader(hub.ReaderOptions{Workspace: "w", Agent: "b", Confirm: hub.ConfirmOnWrite, OneRequest: oneRequest})
		d, err := h.Claim(ctx, hub.ClaimRequest{Workspace: "w", Agent: "b", Queue: "jobs", Reader: r.ClaimKey("w", "b"), Timeout: time.Second})
		if err != nil || d == nil {
			t.Fatalf("claim: %v, %v", d, err)
		}
		r.Claimed(d.MessageID)
		r.Lost(ctx)
		want := 0
		if !oneRequest {
			want = 1
		}
		if n, err := h.Unread(ctx, "w", "queue:jobs"); err != nil || n != want {
			t.Errorf("one request %v: %d tasks waiting (%v), want %d", oneRequest, n, err, want)
		}
	}
}

// TestReaderKeys: keys are unguessable and bound: only the agent a reader was
// opened for, in its workspace, may settle it by its key.
func TestReaderKeys(t *testing.T) {
	ctx := context.Background()
	h := newHub(t, nil)
	m := send(t, h, "a", "b", "hello")
	r := h.OpenReader(hub.ReaderOptions{Workspace: "w", Agent: "b", Confirm: hub.ConfirmOnReceipt, OneRequest: true})
	if r2 := h.OpenReader(hub.ReaderOptions{Workspace: "w", Agent: "b"}); r2.Key() == r.Key() {
		t.Fatalf("two readers share the key %s", r.Key())
	}
	read(t, h, r, "")
	r.Written(ctx, "", nil)
	for _, tc := range []struct{ name, key, ws, agent string }{
		{"another agent", r.Key(), "w", "c"},
		{"another workspace", r.Key(), "x", "b"},
		{"a made-up key of b's", "api-" + strings.Repeat("a", 26) + "-" + hub.NameHash("w", "b"), "w", "c"},
		{"not a reader key", "api-1", "w", "b"},
		{"no kind", strings.TrimPrefix(r.Key(), "rd"), "w", "c"},
	} {
		if _, err := h.ResumeReader(tc.key, tc.ws, tc.agent); err == nil {
			t.Errorf("%s: resumed, want refused", tc.name)
		}
	}
	if d := state(t, h, m, "b"); d.State != hub.Delivered {
		t.Fatalf("after refusals: got %s, want still delivered", d.State)
	}
	own, err := h.ResumeReader(r.Key(), "w", "b")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := own.Receipt(ctx, []string{m.ID}, true); err != nil || n != 1 {
		t.Fatalf("receipt: %d, %v; want 1", n, err)
	}
	if d := state(t, h, m, "b"); d.State != hub.Read {
		t.Errorf("after its own receipt: got %s, want read", d.State)
	}
}

// TestNilReader: a door without a reader reads at once.
func TestNilReader(t *testing.T) {
	ctx := context.Background()
	h := newHub(t, nil)
	m := send(t, h, "a", "b", "hello")
	var r *hub.Reader
	ds, _, err := h.Receive(ctx, hub.ReceiveRequest{Workspace: "w", Agent: "b", Reader: r})
	if err != nil || len(ds) != 1 {
		t.Fatal(ds, err)
	}
	r.Written(ctx, "", nil)
	r.Close(ctx)
	if d := state(t, h, m, "b"); d.State != hub.Read {
		t.Errorf("got %s, want read", d.State)
	}
}
