package hub_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/store/sqlite"
)

// recorder keeps the delivery events a hub publishes, as "kind agent count".
type recorder struct {
	mu     sync.Mutex
	events []string
}

func record(h *hub.Hub) *recorder {
	r := &recorder{}
	h.Subscribe(func(e hub.Event) {
		if !strings.HasPrefix(string(e.Kind), "message.") || e.Kind == hub.EventMessageSent {
			return
		}
		r.mu.Lock()
		r.events = append(r.events, fmt.Sprintf("%s %s %d", e.Kind, e.Agent, e.Count))
		r.mu.Unlock()
	})
	return r
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// running starts the hub's sweeper for the rest of the test.
func running(t *testing.T, h *hub.Hub) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func send(t *testing.T, h *hub.Hub, from, to, content string) *hub.Message {
	t.Helper()
	res, err := h.Send(context.Background(), hub.SendRequest{Workspace: "w", From: from, To: to, Content: content})
	if err != nil {
		t.Fatalf("send %s to %s: %v", content, to, err)
	}
	return res.Message
}

func state(t *testing.T, h *hub.Hub, m *hub.Message, recipient string) *hub.Delivery {
	t.Helper()
	st, err := h.MessageStatus(context.Background(), "w", "", m.ID)
	if err != nil {
		t.Fatalf("status of %s: %v", m.Content, err)
	}
	for _, d := range st.Deliveries {
		if d.Recipient == recipient {
			return d
		}
	}
	t.Fatalf("status of %s: no copy for %s", m.Content, recipient)
	return nil
}

// TestLeaseStateMachine walks one copy through every state: handed out,
// expired back to the inbox, handed out again as a repeat, confirmed.
func TestLeaseStateMachine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		h := newHub(t, &hub.Options{Lease: time.Minute, SweepEvery: 10 * time.Second})
		ev := record(h)
		running(t, h)
		m := send(t, h, "a", "b", "hello")
		if d := state(t, h, m, "b"); d.State != hub.Queued {
			t.Fatalf("after send: got %s, want queued", d.State)
		}
		start := time.Now()
		ds, n, err := h.Receive(ctx, hub.ReceiveRequest{Workspace: "w", Agent: "b", Reader: hub.KeyedReader(h, "s1")})
		if err != nil || len(ds) != 1 || n != 0 {
			t.Fatalf("receive: got %d, %d left, %v; want 1, 0 left", len(ds), n, err)
		}
		if d := ds[0]; d.State != hub.Delivered || d.Count != 1 || d.Repeat() || d.Reader != "s1" ||
			!d.LeaseUntil.Equal(start.Add(time.Minute).UTC()) || d.Message.Content != "hello" {
			t.Errorf("received: got %+v, want hello delivered to s1 once, lease to %v", d, start.Add(time.Minute))
		}
		// The lease holds until it ends...
		time.Sleep(59 * time.Second)
		synctest.Wait()
		if d := state(t, h, m, "b"); d.State != hub.Delivered {
			t.Errorf("59 s into a 1 min lease: got %s, want delivered", d.State)
		}
		if n, _ := h.Unread(ctx, "w", "b"); n != 0 {
			t.Errorf("unread while leased: got %d, want 0", n)
		}
		// ...and then the sweep puts the copy back.
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if d := state(t, h, m, "b"); d.State != hub.Redelivered || d.Count != 1 || d.Reader != "" {
			t.Errorf("after the lease ran out: got %+v, want redelivered, count 1", d)
		}
		if n, _ := h.Unread(ctx, "w", "b"); n != 1 {
			t.Errorf("unread after the lease ran out: got %d, want 1", n)
		}
		ds, _, err = h.Receive(ctx, hub.ReceiveRequest{Workspace: "w", Agent: "b", Reader: hub.KeyedReader(h, "s2")})
		if err != nil || len(ds) != 1 || ds[0].Count != 2 || !ds[0].Repeat() || ds[0].MessageID != m.ID {
			t.Fatalf("second receive: got %v, %v; want hello again, count 2", ds, err)
		}
		// A late confirm of the first reader confirms nothing.
		if n, err := h.Confirm(ctx, "s1", nil); err != nil || n != 0 {
			t.Errorf("confirm by the reader whose lease ended: got %d, %v; want 0", n, err)
		}
		if n, err := h.Confirm(ctx, "s2", []string{m.ID}); err != nil || n != 1 {
			t.Errorf("confirm: got %d, %v; want 1", n, err)
		}
		if d := state(t, h, m, "b"); d.State != hub.Read || d.Count != 2 {
			t.Errorf("after confirm: got %+v, want read, count 2", d)
		}
		// A read copy never comes back.
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if d := state(t, h, m, "b"); d.State != hub.Read {
			t.Errorf("10 minutes after confirm: got %s, want read", d.State)
		}
		want := []string{"message.delivered b 1", "message.redelivered b 1", "message.delivered b 2", "message.read b 2"}
		if got := ev.take(); !slices.Equal(got, want) {
			t.Errorf("events: got %v, want %v", got, want)
		}
	})
}

// TestReleaseWakesWaiter: a copy released by a reader that went away goes to
// the wait that is blocked on the inbox.
func TestReleaseWakesWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		h := newHub(t, nil)
		m := send(t, h, "a", "b", "hello")
		if ds, _, err := h.Receive(ctx, hub.ReceiveRequest{Workspace: "w", Agent: "b", Reader: hub.KeyedReader(h, "dead-session")}); err != nil || len(ds) != 1 {
			t.Fatalf("receive: %v %v", ds, err)
		}
		got := make(chan *hub.Delivery, 1)
		go func() {
			d, err := h.Next(ctx, hub.WaitRequest{Workspace: "w", Agent: "b", Reader: hub.KeyedReader(h, "new-session"), Timeout: time.Minute})
			if err != nil {
				t.Errorf("wait: %v", err)
			}
			got <- d
		}()
		synctest.Wait()
		if len(got) != 0 {
			t.Fatal("the wait returned while the only message was leased to another reader")
		}
		if n, err := h.Release(ctx, "dead-session", nil); err != nil || n != 1 {
			t.Fatalf("release: got %d, %v; want 1", n, err)
		}
		d := <-got
		if d == nil || d.MessageID != m.ID || d.Count != 2 || d.Reader != "new-session" || d.State != hub.Delivered {
			t.Errorf("woken wait: got %+v, want hello delivered to new-session, count 2", d)
		}
	})
}

// TestCancelledWaitTakesNothing: a wait whose caller is gone by the time the
// store handed it a message puts that message back.
func TestCancelledWaitTakesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(t, nil)
		ctx, cancel := context.WithCancel(context.Background())
		// The caller goes away exactly between the hand-out and the return:
		// the delivered event is published in between, on the same goroutine.
		h.Subscribe(func(e hub.Event) {
			if e.Kind == hub.EventMessageDelivered && e.Reader == "s1" {
				cancel()
			}
		})
		ev := record(h)
		errc := make(chan error, 1)
		go func() {
			d, err := h.Next(ctx, hub.WaitRequest{Workspace: "w", Agent: "b", Reader: hub.KeyedReader(h, "s1"), Timeout: time.Minute})
			if d != nil {
				t.Errorf("cancelled wait: got %v, want nothing", d.Message)
			}
			errc <- err
		}()
		synctest.Wait()
		m := send(t, h, "a", "b", "hello")
		if err := <-errc; err == nil {
			t.Error("cancelled wait: got no error")
		}
		if d := state(t, h, m, "b"); d.State != hub.Redelivered || d.Count != 1 {
			t.Errorf("after the cancelled wait: got %+v, want redelivered (in the inbox), count 1", d)
		}
		want := []string{"message.delivered b 1", "message.redelivered b 1"}
		if got := ev.take(); !slices.Equal(got, want) {
			t.Errorf("events: got %v, want %v", got, want)
		}
		// A wait already cancelled does not even look.
		if d, err := h.Next(ctx, hub.WaitRequest{Workspace: "w", Agent: "b", Reader: hub.KeyedReader(h, "s2")}); d != nil || err == nil {
			t.Errorf("wait with a cancelled context: got %v, %v; want nothing and an error", d, err)
		}
		if n, _ := h.Unread(context.Background(), "w", "b"); n != 1 {
			t.Errorf("unread: got %d, want 1", n)
		}
	})
}

// TestRecover: a daemon that starts over the store of one that crashed puts
// what the dead one handed out unconfirmed back in the inboxes.
func TestRecover(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/parley.db"
	db, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(db, nil)
	var ms []*hub.Message
	for i := range 3 {
		ms = append(ms, send(t, h, "a", "b", fmt.Sprint(i)))
	}
	h.Receive(ctx, hub.ReceiveRequest{Workspace: "w", Agent: "b", Reader: hub.KeyedReader(h, "s1"), Limit: 2})
	h.Confirm(ctx, "s1", []string{ms[0].ID})
	db.Close() // the "crash": nothing more is written

	db, err = sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h = hub.New(db, nil)
	if n, err := h.Recover(ctx); err != nil || n != 1 {
		t.Fatalf("recover: got %d, %v; want 1 (the unconfirmed one)", n, err)
	}
	ds, _, err := h.Inbox(ctx, "w", "b", 10)
	var got []string
	for _, d := range ds {
		got = append(got, fmt.Sprintf("%s %s %d", d.Message.Content, d.State, d.Count))
	}
	if want := []string{"1 redelivered 1", "2 queued 0"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("inbox after recover: got %v, %v; want %v", got, err, want)
	}
}

func TestAckAndOverdue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		h := newHub(t, nil)
		ev := record(h)
		running(t, h)
		join(t, h, "w", "alice", "lead")
		join(t, h, "w", "bob", "dev")
		join(t, h, "w", "carol", "dev")
		res, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "alice", To: "@dev", Content: "deploy?",
			AckDeadline: time.Now().Add(30 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		m := res.Message
		if !m.AckRequired {
			t.Error("a deadline without ack_required: got AckRequired false, want implied")
		}
		if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "alice", To: "bob", Content: "x",
			AckDeadline: time.Now().Add(-time.Second)}); hub.KindOf(err) != hub.Invalid {
			t.Errorf("send with a past deadline: got %v, want invalid", err)
		}
		if n, err := h.Ack(ctx, "w", "carol", []string{m.ID}); err != nil || n != 1 {
			t.Errorf("carol acks: got %d, %v; want 1", n, err)
		}
		if n, err := h.Ack(ctx, "w", "carol", []string{m.ID}); err != nil || n != 0 {
			t.Errorf("carol acks again: got %d, %v; want 0, no error", n, err)
		}
		if _, err := h.Ack(ctx, "w", "alice", []string{m.ID}); hub.KindOf(err) != hub.Forbidden {
			t.Errorf("the sender acks: got %v, want forbidden", err)
		}
		if _, err := h.Ack(ctx, "w", "bob", []string{"01NOSUCHMESSAGE"}); hub.KindOf(err) != hub.NotFound {
			t.Errorf("ack of an unknown id: got %v, want not found", err)
		}
		if od, _ := h.Overdue(ctx, "w", "alice"); len(od) != 0 {
			t.Errorf("overdue before the deadline: got %d, want 0", len(od))
		}
		time.Sleep(31 * time.Second)
		synctest.Wait()
		od, err := h.Overdue(ctx, "w", "alice")
		if err != nil || len(od) != 1 || od[0].Message.ID != m.ID || !slices.Equal(od[0].Pending, []string{"bob"}) {
			t.Fatalf("overdue after the deadline: got %v, %v; want deploy? pending bob", od, err)
		}
		// The sender got one notice, and gets no more.
		time.Sleep(time.Minute)
		synctest.Wait()
		ds, _, err := h.Inbox(ctx, "w", "alice", 10)
		if err != nil || len(ds) != 1 {
			t.Fatalf("alice's inbox: got %d, %v; want one notice", len(ds), err)
		}
		n := ds[0].Message
		if n.From != hub.NoticeSender || n.Metadata["kind"] != "ack_overdue" || n.Metadata["message_id"] != m.ID ||
			n.Metadata["pending"] != "bob" || !strings.Contains(n.Content, m.ID) || !strings.Contains(n.Content, "bob") {
			t.Errorf("notice: got %+v, want one from parley naming %s and bob", n, m.ID)
		}
		if n, err := h.Ack(ctx, "w", "bob", []string{m.ID}); err != nil || n != 1 {
			t.Errorf("bob acks late: got %d, %v", n, err)
		}
		if od, _ := h.Overdue(ctx, "w", ""); len(od) != 0 {
			t.Errorf("overdue after every ack: got %v, want none", od)
		}
		st, err := h.MessageStatus(ctx, "w", "alice", m.ID)
		if err != nil || len(st.Deliveries) != 2 || st.Deliveries[0].State != hub.Acked || st.Deliveries[1].State != hub.Acked {
			t.Errorf("status: got %+v, %v; want both acked", st, err)
		}
		want := []string{"message.acked carol 0", "message.acked bob 0"}
		if got := ev.take(); !slices.Equal(got, want) {
			t.Errorf("events: got %v, want %v", got, want)
		}
	})
}

func TestMessageStatusVisibility(t *testing.T) {
	ctx := context.Background()
	h := newHub(t, nil)
	res, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "alice", To: "bob", Content: "x"})
	if err != nil {
		t.Fatal(err)
	}
	h.Send(ctx, hub.SendRequest{Workspace: "w", From: "alice", To: "carol", Content: "y", ReplyTo: res.Message.ID})
	for _, tt := range []struct {
		who  string
		want []string
		kind hub.Kind
	}{
		{"alice", []string{"bob"}, 0},
		{"bob", []string{"bob"}, 0},
		{"", []string{"bob"}, 0},
		// carol is in the thread (a reply went to her), with no copy of
		// this message: she sees it, and no copy. (Who may read it at all
		// is the read rule's, in ops.)
		{"carol", nil, 0},
	} {
		st, err := h.MessageStatus(ctx, "w", tt.who, res.Message.ID)
		if tt.kind != 0 {
			if hub.KindOf(err) != tt.kind {
				t.Errorf("status as %q: got %v, want %v", tt.who, err, tt.kind)
			}
			continue
		}
		var got []string
		for _, d := range st.Deliveries {
			got = append(got, d.Recipient)
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("status as %q: got %v, %v; want %v", tt.who, got, err, tt.want)
		}
	}
	if _, err := h.MessageStatus(ctx, "w", "alice", "nope"); hub.KindOf(err) != hub.NotFound {
		t.Errorf("status of an unknown message: got %v, want not found", err)
	}
}

func TestWaitForReply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		h := newHub(t, nil)
		q := send(t, h, "alice", "bob", "ready?")
		got := make(chan *hub.Delivery, 1)
		go func() {
			d, err := h.WaitForReply(ctx, hub.ReplyWaitRequest{Workspace: "w", Agent: "alice", Reader: hub.KeyedReader(h, "s1"),
				MessageID: q.ID, Timeout: time.Minute})
			if err != nil {
				t.Errorf("wait for reply: %v", err)
			}
			got <- d
		}()
		synctest.Wait()
		send(t, h, "carol", "alice", "unrelated")
		// A reply in the thread from someone the question did not go to
		// is not the answer: it stays in the inbox (issue 24).
		if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "mallory", To: "alice", Content: "answer from mallory", ReplyTo: q.ID}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if len(got) != 0 {
			t.Fatalf("an unrelated message, or a stranger's reply, ended the wait for a reply: %+v", (<-got).Message)
		}
		if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "bob", To: "alice", Content: "yes", ReplyTo: q.ID}); err != nil {
			t.Fatal(err)
		}
		if d := <-got; d == nil || d.Message.Content != "yes" || d.Reader != "s1" {
			t.Errorf("reply: got %+v, want yes, delivered to s1", d)
		}
		if n, _ := h.Unread(ctx, "w", "alice"); n != 2 {
			t.Errorf("unread after the reply: got %d, want the unrelated one and mallory's", n)
		}
		// No reply in time: nil, nil; an unknown message: not found.
		if d, err := h.WaitForReply(ctx, hub.ReplyWaitRequest{Workspace: "w", Agent: "alice", MessageID: q.ID, Timeout: time.Second}); d != nil || err != nil {
			t.Errorf("wait with no reply: got %v, %v; want a timeout", d, err)
		}
		if _, err := h.WaitForReply(ctx, hub.ReplyWaitRequest{Workspace: "w", Agent: "alice", MessageID: "nope", Timeout: time.Second}); hub.KindOf(err) != hub.NotFound {
			t.Errorf("wait for a reply to an unknown message: got %v, want not found", err)
		}
	})
}

// TestConfirmLater: a confirmation that nothing waits for is written with the
// reader's next hand-out, before its leases are put back, or by the sweep;
// status shows it at once; and it speaks only for what the reader held.
func TestConfirmLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		h := newHub(t, &hub.Options{Lease: time.Minute, SweepEvery: 10 * time.Second})
		ev := record(h)
		running(t, h)
		stored := func(m *hub.Message) hub.DeliveryState {
			t.Helper()
			ds, err := h.Store().Deliveries(ctx, "w", m.ID)
			if err != nil || len(ds) != 1 {
				t.Fatalf("deliveries of %s: %v, %v", m.Content, ds, err)
			}
			return ds[0].State
		}
		readers := map[string]*hub.Reader{}
		rd := func(key string) *hub.Reader {
			if readers[key] == nil {
				readers[key] = hub.KeyedReader(h, key)
			}
			return readers[key]
		}
		// confirmLater is the client's receipt of the messages, which the
		// reader leaves to be written later.
		confirmLater := func(reader string, ids []string) {
			t.Helper()
			if n, err := rd(reader).Receipt(ctx, ids, true); n != len(ids) || err != nil {
				t.Fatalf("receipt for %s: %d, %v", reader, n, err)
			}
		}
		receive := func(reader string, want ...*hub.Message) {
			t.Helper()
			ds, _, err := h.Receive(ctx, hub.ReceiveRequest{Workspace: "w", Agent: "b", Reader: rd(reader)})
			if err != nil || len(ds) != len(want) {
				t.Fatalf("receive for %s: got %d, %v; want %d", reader, len(ds), err, len(want))
			}
			for i, d := range ds {
				if d.MessageID != want[i].ID || d.State != hub.Delivered {
					t.Fatalf("receive for %s: got %s %s, want %s delivered", reader, d.Message.Content, d.State, want[i].Content)
				}
			}
		}

		// Written with the next hand-out, not before.
		m1 := send(t, h, "a", "b", "one")
		receive("s1", m1)
		confirmLater("s1", []string{m1.ID})
		if st := stored(m1); st != hub.Delivered {
			t.Fatalf("confirmed later, before the next hand-out: stored %s, want delivered", st)
		}
		m2 := send(t, h, "a", "b", "two")
		receive("s1", m2)
		if st := stored(m1); st != hub.Read {
			t.Errorf("after the next hand-out: m1 stored %s, want read", st)
		}
		want := []string{"message.delivered b 1", "message.read b 1", "message.delivered b 1"}
		if got := ev.take(); !slices.Equal(got, want) {
			t.Errorf("events: got %v, want %v", got, want)
		}

		// Written before the reader's leases go back: what it has stays read.
		confirmLater("s1", []string{m2.ID})
		if n, err := h.Release(ctx, "s1", nil); err != nil || n != 0 {
			t.Errorf("release after a confirmation: put back %d, %v; want 0", n, err)
		}
		if st := stored(m2); st != hub.Read {
			t.Errorf("m2 after release: stored %s, want read", st)
		}

		// Status shows it at once; with no status asked, the sweep writes it.
		m3 := send(t, h, "a", "b", "three")
		receive("s2", m3)
		confirmLater("s2", []string{m3.ID})
		if d := state(t, h, m3, "b"); d.State != hub.Read {
			t.Errorf("status after a confirmation: got %s, want read", d.State)
		}
		m4 := send(t, h, "a", "b", "four")
		receive("s2", m4)
		confirmLater("s2", []string{m4.ID})
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if st := stored(m4); st != hub.Read {
			t.Errorf("after a sweep: m4 stored %s, want read", st)
		}

		// A confirmation made before the hand-out does not confirm it.
		m5 := send(t, h, "a", "b", "five")
		confirmLater("s3", []string{m5.ID})
		receive("s3", m5)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if d := state(t, h, m5, "b"); d.State != hub.Delivered || d.Reader != "s3" {
			t.Errorf("confirmed before it was handed out: got %s to %q, want delivered to s3", d.State, d.Reader)
		}
	})
}
