package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// The delivery contract: see hub.DeliveryState for the state machine.

// take hands up to limit of recipient's inbox to reader at t, leased for a minute.
func take(t *testing.T, s hub.Store, ws, recipient, reader string, limit int, tm time.Time) []*hub.Delivery {
	t.Helper()
	ds, _, err := s.Take(ctx(t), hub.TakeQuery{Workspace: ws, Recipient: recipient, Reader: reader,
		MaxRank: hub.Low.Rank(), Limit: limit, Now: tm, LeaseUntil: tm.Add(time.Minute)})
	if err != nil {
		t.Fatalf("Take(%s for %s): %v", recipient, reader, err)
	}
	return ds
}

func deliveryIDs(ds []*hub.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.MessageID
	}
	return out
}

// states renders deliveries as "id:state:count" for comparison.
func states(ds []*hub.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = fmt.Sprintf("%s:%s:%d", d.MessageID, d.State, d.Count)
	}
	return out
}

func st(m *hub.Message, state hub.DeliveryState, count int) string {
	return fmt.Sprintf("%s:%s:%d", m.ID, state, count)
}

// status returns recipient's delivery of m.
func status(t *testing.T, s hub.Store, m *hub.Message, recipient string) *hub.Delivery {
	t.Helper()
	ds, err := s.Deliveries(ctx(t), m.Workspace, m.ID)
	if err != nil {
		t.Fatalf("Deliveries(%s): %v", m.ID, err)
	}
	for _, d := range ds {
		if d.Recipient == recipient {
			return d
		}
	}
	t.Fatalf("Deliveries(%s): no delivery to %s in %v", m.ID, recipient, states(ds))
	return nil
}

func testAckFieldsRoundTrip(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	plain := f.send("ws", "alice", hub.Normal, "plain", "bob")
	m := f.msg("ws", "alice", hub.Normal, "ack me")
	m.AckRequired, m.AckDeadline = true, at(60_000)
	if err := s.CreateMessage(c, m, []string{"bob"}); err != nil {
		t.Fatalf("CreateMessage: %v", err)
	}
	for _, tt := range []struct {
		m        *hub.Message
		required bool
		deadline time.Time
	}{{plain, false, time.Time{}}, {m, true, at(60_000)}} {
		got, err := s.Message(c, "ws", tt.m.ID)
		if err != nil {
			t.Fatalf("Message: %v", err)
		}
		if got.AckRequired != tt.required || !got.AckDeadline.Equal(tt.deadline) {
			t.Errorf("Message(%s): ack required %v, deadline %v; want %v, %v", tt.m.Content, got.AckRequired, got.AckDeadline, tt.required, tt.deadline)
		}
		ps := take(t, s, "ws", "bob", "", 1, at(1))
		if len(ps) != 1 || ps[0].Message.AckRequired != tt.required || !ps[0].Message.AckDeadline.Equal(tt.deadline) {
			t.Errorf("Take's message: got %+v, want ack required %v, deadline %v", ps, tt.required, tt.deadline)
		}
	}
}

func testTakeLeases(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	m1 := f.send("ws", "alice", hub.Normal, "one", "bob")
	m2 := f.send("ws", "alice", hub.Normal, "two", "bob")
	if d := status(t, s, m1, "bob"); d.State != hub.Queued || d.Count != 0 || !d.DeliveredAt.IsZero() {
		t.Errorf("before any take: got %s count %d delivered %v, want queued 0 never", d.State, d.Count, d.DeliveredAt)
	}
	got := take(t, s, "ws", "bob", "s1", 1, at(10))
	if len(got) != 1 || got[0].MessageID != m1.ID || got[0].Message == nil || got[0].Message.Content != "one" {
		t.Fatalf("Take: got %v, want [%s] with its message", states(got), m1.ID)
	}
	d := got[0]
	if d.State != hub.Delivered || d.Count != 1 || d.Reader != "s1" || d.Recipient != "bob" || d.Workspace != "ws" ||
		!d.DeliveredAt.Equal(at(10)) || !d.LeaseUntil.Equal(at(10).Add(time.Minute)) || !d.ReadAt.IsZero() {
		t.Errorf("Take's delivery: got %+v; want delivered to s1, count 1, at %v, lease to %v", d, at(10), at(10).Add(time.Minute))
	}
	// The status says the same.
	if sd := status(t, s, m1, "bob"); sd.State != hub.Delivered || sd.Reader != "s1" || sd.Count != 1 ||
		!sd.DeliveredAt.Equal(at(10)) || !sd.LeaseUntil.Equal(at(10).Add(time.Minute)) {
		t.Errorf("Deliveries after Take: got %+v", sd)
	}
	// A leased copy has left the inbox: not counted, not peeked, not taken again.
	if n, err := s.Unread(c, "ws", "bob", 3); err != nil || n != 1 {
		t.Errorf("Unread with one leased: got %d, %v; want 1", n, err)
	}
	if p, err := s.Peek(c, "ws", "bob", 10); err != nil || !slices.Equal(deliveryIDs(p), []string{m2.ID}) {
		t.Errorf("Peek with one leased: got %v, %v; want [%s]", deliveryIDs(p), err, m2.ID)
	} else if p[0].State != hub.Queued || p[0].Message == nil {
		t.Errorf("Peek: got %+v, want a queued copy with its message", p[0])
	}
	if got := take(t, s, "ws", "bob", "s2", 10, at(11)); !slices.Equal(deliveryIDs(got), []string{m2.ID}) {
		t.Errorf("second Take: got %v, want only [%s]", deliveryIDs(got), m2.ID)
	}
	// Without a reader a copy is read at once.
	m3 := f.send("ws", "alice", hub.Normal, "three", "bob")
	got = take(t, s, "ws", "bob", "", 1, at(12))
	if len(got) != 1 || got[0].State != hub.Read || got[0].Count != 1 || got[0].Reader != "" || !got[0].ReadAt.Equal(at(12)) {
		t.Errorf("Take without a reader: got %+v, want read at %v, count 1", got, at(12))
	}
	if sd := status(t, s, m3, "bob"); sd.State != hub.Read || !sd.ReadAt.Equal(at(12)) {
		t.Errorf("Deliveries after a take without a reader: got %+v, want read", sd)
	}
}

// testHandoff: a send that hands a recipient's copy straight to a waiting
// reader writes it as a take would have handed it out: out of the inbox,
// leased (or read without a reader), with its wake path; it confirms and
// goes back to its place as a taken copy does. Bad hand-offs write nothing.
func testHandoff(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	queued := f.send("ws", "alice", hub.Normal, "queued first", "bob")
	m := f.msg("ws", "alice", hub.High, "handed")
	leased := hub.Handoff{Recipient: "bob", Reader: "s1", Now: at(10), LeaseUntil: at(10).Add(time.Minute), Via: hub.WakeChannel}
	read := hub.Handoff{Recipient: "dave", Now: at(10), Via: hub.WakeWait}
	if err := s.CreateMessage(c, m, []string{"bob", "carol", "dave"}, leased, read); err != nil {
		t.Fatalf("CreateMessage with hand-offs: %v", err)
	}
	if d := status(t, s, m, "bob"); d.State != hub.Delivered || d.Count != 1 || d.Reader != "s1" ||
		!d.DeliveredAt.Equal(at(10)) || !d.LeaseUntil.Equal(at(10).Add(time.Minute)) ||
		d.WokeVia != hub.WakeChannel || !d.WokeAt.Equal(at(10)) || !d.ReadAt.IsZero() {
		t.Errorf("bob's handed copy: got %+v; want delivered to s1 at %v, count 1, via channel", d, at(10))
	}
	if d := status(t, s, m, "dave"); d.State != hub.Read || d.Count != 1 || d.Reader != "" || !d.ReadAt.Equal(at(10)) || d.WokeVia != hub.WakeWait {
		t.Errorf("dave's handed copy without a reader: got %+v; want read at %v, count 1, via wait", d, at(10))
	}
	if d := status(t, s, m, "carol"); d.State != hub.Queued || d.Count != 0 || d.Reader != "" {
		t.Errorf("carol's copy, not handed: got %+v; want queued", d)
	}
	// The handed copy is not in bob's inbox: only the older one is.
	if n, err := s.Unread(c, "ws", "bob", hub.Low.Rank()); err != nil || n != 1 {
		t.Errorf("Unread(bob): got %d, %v; want 1", n, err)
	}
	if got := take(t, s, "ws", "bob", "s2", 10, at(11)); !slices.Equal(deliveryIDs(got), []string{queued.ID}) {
		t.Errorf("Take(bob): got %v, want only [%s]", deliveryIDs(got), queued.ID)
	}
	// Released, it goes back in its place, marked; confirmed, it is read.
	if got, err := s.Release(c, hub.ReleaseQuery{Reader: "s1"}); err != nil || !slices.Equal(states(got), []string{st(m, hub.Redelivered, 1)}) {
		t.Fatalf("Release(s1): got %v, %v; want [%s]", states(got), err, st(m, hub.Redelivered, 1))
	}
	if got := take(t, s, "ws", "bob", "s3", 10, at(12)); !slices.Equal(states(got), []string{st(m, hub.Delivered, 2)}) {
		t.Errorf("Take after the release: got %v, want [%s]", states(got), st(m, hub.Delivered, 2))
	}
	if got, err := s.Confirm(c, "s3", []string{m.ID}, at(13)); err != nil || !slices.Equal(states(got), []string{st(m, hub.Read, 2)}) {
		t.Errorf("Confirm(s3): got %v, %v; want [%s]", states(got), err, st(m, hub.Read, 2))
	}
	// A hand-off to someone who is not a recipient, or twice to one, is
	// refused and stores nothing.
	for _, tt := range []struct {
		name   string
		handed []hub.Handoff
	}{
		{"not a recipient", []hub.Handoff{{Recipient: "erin", Reader: "s9", Now: at(20), LeaseUntil: at(80)}}},
		{"twice", []hub.Handoff{{Recipient: "bob", Reader: "s9", Now: at(20), LeaseUntil: at(80)}, {Recipient: "bob", Reader: "s8", Now: at(20), LeaseUntil: at(80)}}},
	} {
		bad := f.msg("ws", "alice", hub.Normal, "bad "+tt.name)
		if err := s.CreateMessage(c, bad, []string{"bob"}, tt.handed...); hub.KindOf(err) != hub.Invalid {
			t.Errorf("CreateMessage, hand-off %s: got %v, want an invalid error", tt.name, err)
		}
		if _, err := s.Message(c, "ws", bad.ID); !hub.IsNotFound(err) {
			t.Errorf("after the refused hand-off %s: Message got %v, want not found", tt.name, err)
		}
	}
}

func testConfirm(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	m1 := f.send("ws", "alice", hub.Normal, "one", "bob")
	m2 := f.send("ws", "alice", hub.Normal, "two", "bob")
	m3 := f.send("ws", "alice", hub.Normal, "three", "bob", "carol")
	take(t, s, "ws", "bob", "s1", 3, at(10))
	take(t, s, "ws", "carol", "s2", 3, at(10))

	// Another reader confirms nothing of s1's.
	if got, err := s.Confirm(c, "s2", []string{m1.ID}, at(20)); err != nil || len(got) != 0 {
		t.Errorf("Confirm by another reader: got %v, %v; want nothing", states(got), err)
	}
	got, err := s.Confirm(c, "s1", []string{m2.ID, "no-such-id"}, at(20))
	if err != nil || !slices.Equal(states(got), []string{st(m2, hub.Read, 1)}) {
		t.Fatalf("Confirm(s1, m2): got %v, %v; want [%s]", states(got), err, st(m2, hub.Read, 1))
	}
	if got[0].Recipient != "bob" || got[0].Workspace != "ws" || !got[0].ReadAt.Equal(at(20)) {
		t.Errorf("Confirm's delivery: got %+v, want bob's in ws read at %v", got[0], at(20))
	}
	// Everything s1 still holds.
	got, err = s.Confirm(c, "s1", nil, at(21))
	if g := states(got); err != nil || !slices.Equal(sorted(g), sorted([]string{st(m1, hub.Read, 1), st(m3, hub.Read, 1)})) {
		t.Errorf("Confirm(s1, all): got %v, %v; want m1 and m3 read", g, err)
	}
	if got, err := s.Confirm(c, "s1", nil, at(22)); err != nil || len(got) != 0 {
		t.Errorf("Confirm again: got %v, %v; want nothing", states(got), err)
	}
	if d := status(t, s, m1, "bob"); d.State != hub.Read || !d.ReadAt.Equal(at(21)) || d.Reader != "" {
		t.Errorf("status after Confirm: got %+v, want read at %v, no reader", d, at(21))
	}
	// carol's copy of m3 is still hers, delivered.
	if d := status(t, s, m3, "carol"); d.State != hub.Delivered || d.Reader != "s2" {
		t.Errorf("carol's copy: got %+v, want still delivered to s2", d)
	}
	// A confirmed copy cannot be released.
	if got, err := s.Release(c, hub.ReleaseQuery{Reader: "s1"}); err != nil || len(got) != 0 {
		t.Errorf("Release after Confirm: got %v, %v; want nothing", states(got), err)
	}
}

// testTakeConfirms: a take first confirms what its reader has (its
// confirmations ride the hand-out), only among that reader's leases and only
// those handed out by then, and reports what it confirmed.
func testTakeConfirms(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	m1 := f.send("ws", "alice", hub.Normal, "one", "bob")
	m2 := f.send("ws", "alice", hub.Normal, "two", "bob")
	take(t, s, "ws", "bob", "s1", 1, at(10)) // m1 to s1
	take(t, s, "ws", "bob", "s2", 1, at(10)) // m2 to s2
	m3 := f.send("ws", "alice", hub.Normal, "three", "bob")

	// s1 confirms m1, names m2 (s2's), and takes m3, in one call.
	got, confirmed, err := s.Take(c, hub.TakeQuery{Workspace: "ws", Recipient: "bob", Reader: "s1", MaxRank: hub.Low.Rank(),
		Limit: 5, Now: at(20), LeaseUntil: at(80), Confirm: []string{m1.ID, m2.ID}})
	if err != nil || !slices.Equal(states(got), []string{st(m3, hub.Delivered, 1)}) ||
		!slices.Equal(states(confirmed), []string{st(m1, hub.Read, 1)}) {
		t.Fatalf("Take confirming m1 and m2: got %v, confirmed %v, %v; want [%s], confirmed [%s]",
			states(got), states(confirmed), err, st(m3, hub.Delivered, 1), st(m1, hub.Read, 1))
	}
	if d := confirmed[0]; d.Recipient != "bob" || d.Workspace != "ws" || !d.ReadAt.Equal(at(20)) || d.Reader != "" {
		t.Errorf("confirmed delivery: got %+v, want bob's in ws, read at %v, no reader", d, at(20))
	}
	if d := status(t, s, m1, "bob"); d.State != hub.Read || !d.ReadAt.Equal(at(20)) {
		t.Errorf("m1 after the take: got %+v, want read at %v", d, at(20))
	}
	if d := status(t, s, m2, "bob"); d.State != hub.Delivered || d.Reader != "s2" {
		t.Errorf("m2 after s1 named it: got %+v, want still delivered to s2", d)
	}
	// A confirmation speaks only for what was handed out by its time: m3,
	// handed out at 20, is not confirmed by one made at 15.
	if got, err := s.Confirm(c, "s1", []string{m3.ID}, at(15)); err != nil || len(got) != 0 {
		t.Errorf("Confirm of a later hand-out: got %v, %v; want nothing", states(got), err)
	}
	// Nothing left to take: the confirmation is still made.
	got, confirmed, err = s.Take(c, hub.TakeQuery{Workspace: "ws", Recipient: "bob", Reader: "s1", MaxRank: hub.Low.Rank(),
		Limit: 5, Now: at(30), LeaseUntil: at(90), Confirm: []string{m3.ID}})
	if err != nil || len(got) != 0 || !slices.Equal(states(confirmed), []string{st(m3, hub.Read, 1)}) {
		t.Errorf("Take confirming m3 from an empty inbox: got %v, confirmed %v, %v; want nothing, confirmed [%s]",
			states(got), states(confirmed), err, st(m3, hub.Read, 1))
	}
}

// testReopen: copies given up after they were handed out (leased or
// confirmed, not acked) go back to their places in the inbox; others are
// left alone.
func testReopen(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	m0 := f.send("ws", "alice", hub.Normal, "zero", "bob")
	m1 := f.send("ws", "alice", hub.Normal, "one", "bob", "carol")
	m2 := f.send("ws", "alice", hub.Normal, "two", "bob")
	m3 := f.send("ws", "alice", hub.Normal, "three", "bob")
	take(t, s, "ws", "bob", "s1", 4, at(10))
	take(t, s, "ws", "carol", "s2", 1, at(10))
	if _, err := s.Confirm(c, "s1", []string{m1.ID, m2.ID}, at(11)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ack(c, "ws", "bob", []string{m2.ID}, at(12)); err != nil {
		t.Fatal(err)
	}
	// m0 leased, m1 read, m2 acked, m3 leased and not named; carol's m1 not bob's.
	got, err := s.Reopen(c, "ws", "bob", []string{m0.ID, m1.ID, m2.ID, "01NOSUCHMESSAGE0000000000"})
	if g := states(got); err != nil || !slices.Equal(g, []string{st(m0, hub.Redelivered, 1), st(m1, hub.Redelivered, 1)}) {
		t.Fatalf("Reopen(bob: m0 leased, m1 read, m2 acked): got %v, %v; want m0 and m1 redelivered", g, err)
	}
	if d := status(t, s, m1, "bob"); d.State != hub.Redelivered || !d.ReadAt.IsZero() || d.Reader != "" {
		t.Errorf("bob's m1 after Reopen: got %+v, want redelivered, unread, no reader", d)
	}
	if d := status(t, s, m1, "carol"); d.State != hub.Delivered || d.Reader != "s2" {
		t.Errorf("carol's m1: got %+v, want still delivered to s2", d)
	}
	if d := status(t, s, m3, "bob"); d.State != hub.Delivered {
		t.Errorf("bob's m3: got %s, want still delivered", d.State)
	}
	// In their places: m0 before m1.
	if got := take(t, s, "ws", "bob", "s3", 5, at(20)); !slices.Equal(states(got), []string{st(m0, hub.Delivered, 2), st(m1, hub.Delivered, 2)}) {
		t.Errorf("Take after Reopen: got %v, want m0 then m1, each a second time", states(got))
	}
	if got, err := s.Reopen(c, "ws", "bob", nil); err != nil || len(got) != 0 {
		t.Errorf("Reopen(no ids): got %v, %v; want nothing", states(got), err)
	}
}

// testReleaseMine: a daemon's start puts back what its store handle leased
// (on a store of its own: every lease), expired or not, and nothing else.
func testReleaseMine(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	m0 := f.send("ws", "alice", hub.Normal, "zero", "bob")
	m1 := f.send("ws", "alice", hub.Normal, "one", "bob")
	m2 := f.send("ws", "alice", hub.Normal, "two", "bob")
	take(t, s, "ws", "bob", "s1", 1, at(10))
	take(t, s, "ws", "bob", "s2", 1, at(20))
	take(t, s, "ws", "bob", "", 1, at(30)) // read at once: no lease
	got, err := s.Release(c, hub.ReleaseQuery{Mine: true})
	if g := states(got); err != nil || !slices.Equal(g, []string{st(m0, hub.Redelivered, 1), st(m1, hub.Redelivered, 1)}) {
		t.Errorf("Release(mine): got %v, %v; want m0 and m1 redelivered", g, err)
	}
	if d := status(t, s, m2, "bob"); d.State != hub.Read {
		t.Errorf("m2, read without a lease: got %s, want read", d.State)
	}
}

func sorted(ss []string) []string {
	ss = slices.Clone(ss)
	slices.Sort(ss)
	return ss
}

func testReleaseKeepsPlace(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	m1 := f.send("ws", "alice", hub.Normal, "one", "bob")
	m2 := f.send("ws", "alice", hub.Normal, "two", "bob")
	m3 := f.send("ws", "alice", hub.Normal, "three", "bob")
	if got := take(t, s, "ws", "bob", "s1", 2, at(10)); !slices.Equal(deliveryIDs(got), []string{m1.ID, m2.ID}) {
		t.Fatalf("Take: got %v, want m1, m2", deliveryIDs(got))
	}
	m4 := f.send("ws", "alice", hub.Normal, "four", "bob")
	got, err := s.Release(c, hub.ReleaseQuery{Reader: "s1"})
	if err != nil || !slices.Equal(sorted(states(got)), sorted([]string{st(m1, hub.Redelivered, 1), st(m2, hub.Redelivered, 1)})) {
		t.Fatalf("Release(s1): got %v, %v; want m1 and m2 redelivered", states(got), err)
	}
	if got[0].Reader != "" || !got[0].LeaseUntil.IsZero() {
		t.Errorf("released delivery: got %+v, want no reader and no lease", got[0])
	}
	// Back in the inbox, in their places: before m3 and m4, which came later.
	p, err := s.Peek(c, "ws", "bob", 10)
	want := []string{st(m1, hub.Redelivered, 1), st(m2, hub.Redelivered, 1), st(m3, hub.Queued, 0), st(m4, hub.Queued, 0)}
	if err != nil || !slices.Equal(states(p), want) {
		t.Errorf("Peek after Release: got %v, %v; want %v", states(p), err, want)
	}
	if n, err := s.Unread(c, "ws", "bob", 3); err != nil || n != 4 {
		t.Errorf("Unread after Release: got %d, %v; want 4", n, err)
	}
	// The next reader gets them first, each counted twice now.
	got = take(t, s, "ws", "bob", "s2", 3, at(20))
	want = []string{st(m1, hub.Delivered, 2), st(m2, hub.Delivered, 2), st(m3, hub.Delivered, 1)}
	if !slices.Equal(states(got), want) {
		t.Errorf("Take after Release: got %v, want %v", states(got), want)
	}
	if !got[0].Repeat() || got[2].Repeat() {
		t.Errorf("Repeat: got %v and %v, want true for m1, false for m3", got[0].Repeat(), got[2].Repeat())
	}
	if d := status(t, s, m1, "bob"); d.Reader != "s2" || !d.DeliveredAt.Equal(at(20)) || d.Count != 2 {
		t.Errorf("status after the second take: got %+v, want delivered to s2 at %v, count 2", d, at(20))
	}
	// Priority still comes first: a critical message sent now passes them.
	s.Release(c, hub.ReleaseQuery{Reader: "s2"})
	crit := f.send("ws", "alice", hub.Critical, "fire", "bob")
	if got := take(t, s, "ws", "bob", "s3", 1, at(30)); !slices.Equal(deliveryIDs(got), []string{crit.ID}) {
		t.Errorf("Take after a critical send: got %v, want the critical one", deliveryIDs(got))
	}
}

func testReleaseSelects(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	var ms []*hub.Message
	for i := range 4 {
		ms = append(ms, f.send("ws", "alice", hub.Normal, fmt.Sprint(i), "bob"))
	}
	mc := f.send("ws2", "alice", hub.Normal, "other workspace", "carol")
	// m0, m1 to s1 leased to 10+60 s; m2 to s2 leased to 20+60 s; m3 stays queued.
	take(t, s, "ws", "bob", "s1", 2, at(10_000))
	take(t, s, "ws", "bob", "s2", 1, at(20_000))
	take(t, s, "ws2", "carol", "s3", 1, at(30_000))

	// By reader and message.
	got, err := s.Release(c, hub.ReleaseQuery{Reader: "s1", MessageIDs: []string{ms[1].ID, ms[2].ID}})
	if err != nil || !slices.Equal(states(got), []string{st(ms[1], hub.Redelivered, 1)}) {
		t.Errorf("Release(s1, m1 and m2): got %v, %v; want only m1 (m2 is s2's)", states(got), err)
	}
	// By expiry: only leases that ended by then, whatever the reader.
	got, err = s.Release(c, hub.ReleaseQuery{Expired: at(10_000).Add(time.Minute)})
	if err != nil || !slices.Equal(states(got), []string{st(ms[0], hub.Redelivered, 1)}) {
		t.Errorf("Release(expired by 70 s): got %v, %v; want m0", states(got), err)
	}
	got, err = s.Release(c, hub.ReleaseQuery{Reader: "s2", Expired: at(19_000)})
	if err != nil || len(got) != 0 {
		t.Errorf("Release(s2, expired by 19 s): got %v, %v; want nothing", states(got), err)
	}
	if d := status(t, s, ms[2], "bob"); d.State != hub.Delivered {
		t.Errorf("m2 after releases that do not select it: got %s, want delivered", d.State)
	}
	// Everything, as a daemon does at start.
	got, err = s.Release(c, hub.ReleaseQuery{})
	if g := sorted(states(got)); err != nil || !slices.Equal(g, sorted([]string{st(ms[2], hub.Redelivered, 1), st(mc, hub.Redelivered, 1)})) {
		t.Errorf("Release(all): got %v, %v; want m2 and carol's", g, err)
	}
	for _, d := range got {
		if d.MessageID == mc.ID && (d.Workspace != "ws2" || d.Recipient != "carol") {
			t.Errorf("released delivery of another workspace: got %+v, want ws2/carol", d)
		}
	}
	if d := status(t, s, ms[3], "bob"); d.State != hub.Queued {
		t.Errorf("never taken: got %s, want queued", d.State)
	}
}

func testTakeConcurrentReaders(t *testing.T, s hub.Store) {
	f := newFixture(t, s)
	const workers, messages = 6, 120
	for i := range messages {
		f.send("ws", "alice", hub.Normal, fmt.Sprint(i), "bob")
	}
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		wg   sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			reader := fmt.Sprintf("s%d", w)
			for round := 0; ; round++ {
				ds, _, err := s.Take(ctx(t), hub.TakeQuery{Workspace: "ws", Recipient: "bob", Reader: reader,
					MaxRank: 3, Limit: 1 + w%3, Now: at(1), LeaseUntil: at(2)})
				if err != nil {
					t.Errorf("Take: %v", err)
					return
				}
				if len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					seen[d.MessageID]++
				}
				mu.Unlock()
				// Every other round goes back: released copies are taken again.
				if round%2 == 0 {
					if _, err := s.Release(ctx(t), hub.ReleaseQuery{Reader: reader}); err != nil {
						t.Errorf("Release: %v", err)
						return
					}
				} else if _, err := s.Confirm(ctx(t), reader, nil, at(3)); err != nil {
					t.Errorf("Confirm: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	// Every message ends read; its count is how many times it was taken.
	all, err := s.History(ctx(t), "ws", hub.HistoryQuery{Limit: messages})
	if err != nil || len(all) != messages {
		t.Fatalf("History: got %d, %v; want %d", len(all), err, messages)
	}
	for _, m := range all {
		d := status(t, s, m, "bob")
		if d.State != hub.Read || d.Count != seen[m.ID] || d.Count < 1 {
			t.Errorf("message %s: got %s, count %d; want read, count %d (times taken)", m.Content, d.State, d.Count, seen[m.ID])
		}
	}
}

func testTakeThread(t *testing.T, s hub.Store) {
	f := newFixture(t, s)
	other := f.send("ws", "carol", hub.Critical, "unrelated", "bob")
	root := f.send("ws", "bob", hub.Normal, "question", "alice")
	f.send("ws", "alice", hub.Normal, "old", "bob") // not of the thread
	early := f.msg("ws", "alice", hub.Normal, "early in the thread")
	early.ThreadID = root.ID
	if err := s.CreateMessage(ctx(t), early, []string{"bob"}); err != nil {
		t.Fatal(err)
	}
	reply := f.msg("ws", "alice", hub.Low, "answer")
	reply.ReplyTo, reply.ThreadID = root.ID, root.ID
	if err := s.CreateMessage(ctx(t), reply, []string{"bob"}); err != nil {
		t.Fatal(err)
	}
	q := hub.TakeQuery{Workspace: "ws", Recipient: "bob", Reader: "s1", MaxRank: 3, Limit: 10,
		Thread: root.ID, Now: at(100), LeaseUntil: at(200)}
	got, _, err := s.Take(ctx(t), q)
	if err != nil || !slices.Equal(deliveryIDs(got), []string{early.ID, reply.ID}) {
		t.Errorf("Take(thread): got %v, %v; want the two thread messages, low priority included", contents(messagesOf(got)), err)
	}
	s.Release(ctx(t), hub.ReleaseQuery{Reader: "s1"})
	// After: only what was stored after the given message.
	q.After = early.ID
	got, _, err = s.Take(ctx(t), q)
	if err != nil || !slices.Equal(deliveryIDs(got), []string{reply.ID}) {
		t.Errorf("Take(thread, after early): got %v, %v; want [answer]", contents(messagesOf(got)), err)
	}
	if n, err := s.Unread(ctx(t), "ws", "bob", 3); err != nil || n != 3 {
		t.Errorf("Unread: got %d, %v; want 3 (unrelated, old, early)", n, err)
	}
	if got := take(t, s, "ws", "bob", "s2", 1, at(300)); !slices.Equal(deliveryIDs(got), []string{other.ID}) {
		t.Errorf("Take without a thread: got %v, want the critical unrelated one first", deliveryIDs(got))
	}
}

// testTakeRepliers: a take for a reply admits only the repliers' messages,
// and a task's result by its origin, whoever sent it; the others stay.
func testTakeRepliers(t *testing.T, s hub.Store) {
	f := newFixture(t, s)
	root := f.send("ws", "alice", hub.Normal, "question", "bob")
	inThread := func(from, content string, origin hub.Origin) *hub.Message {
		m := f.msg("ws", from, hub.Normal, content)
		m.ReplyTo, m.ThreadID, m.Origin = root.ID, root.ID, origin
		if err := s.CreateMessage(ctx(t), m, []string{"alice"}); err != nil {
			t.Fatal(err)
		}
		return m
	}
	mallory := inThread("mallory", "not the answer", hub.Origin{})
	forged := inThread("mallory", "a forged result", hub.Origin{Task: "another task"})
	bob := inThread("bob", "the answer", hub.Origin{})
	result := inThread("worker", "the task's result", hub.Origin{Task: root.ID})
	q := hub.TakeQuery{Workspace: "ws", Recipient: "alice", Reader: "s1", MaxRank: 3, Limit: 10,
		Thread: root.ID, After: root.ID, Repliers: []string{"bob"}, Now: at(100), LeaseUntil: at(200)}
	got, _, err := s.Take(ctx(t), q)
	if err != nil || !slices.Equal(deliveryIDs(got), []string{bob.ID}) {
		t.Errorf("Take(repliers bob): got %v, %v; want [the answer]", contents(messagesOf(got)), err)
	}
	q.Repliers, q.ResultOf = []string{}, root.ID
	got, _, err = s.Take(ctx(t), q)
	if err != nil || !slices.Equal(deliveryIDs(got), []string{result.ID}) {
		t.Errorf("Take(the result of the task): got %v, %v; want [the task's result]", contents(messagesOf(got)), err)
	}
	got, _, err = s.Take(ctx(t), hub.TakeQuery{Workspace: "ws", Recipient: "alice", Reader: "s2", MaxRank: 3, Limit: 10,
		Now: at(300), LeaseUntil: at(400)})
	if err != nil || !slices.Equal(deliveryIDs(got), []string{mallory.ID, forged.ID}) {
		t.Errorf("Take(anyone) afterwards: got %v, %v; want mallory's two, left in the inbox", contents(messagesOf(got)), err)
	}
}

func testAck(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	queued := f.send("ws", "alice", hub.Normal, "queued", "bob", "carol")
	leased := f.send("ws", "alice", hub.Normal, "leased", "bob")
	take(t, s, "ws", "bob", "s1", 1, at(10)) // queued's copy to bob
	take(t, s, "ws", "bob", "s1", 1, at(11)) // leased
	s.Confirm(c, "s1", []string{queued.ID}, at(12))

	got, err := s.Ack(c, "ws", "bob", []string{queued.ID, leased.ID, "no-such-id"}, at(20))
	if err != nil || !slices.Equal(states(got), []string{st(queued, hub.Acked, 1), st(leased, hub.Acked, 1)}) {
		t.Fatalf("Ack: got %v, %v; want both acked", states(got), err)
	}
	for _, d := range got {
		if !d.AckedAt.Equal(at(20)) || d.Reader != "" {
			t.Errorf("acked delivery: got %+v, want acked at %v, no reader", d, at(20))
		}
	}
	// Ack implies read; a copy read before keeps its read time.
	if d := status(t, s, queued, "bob"); d.State != hub.Acked || !d.ReadAt.Equal(at(12)) || !d.AckedAt.Equal(at(20)) {
		t.Errorf("status of an acked read copy: got %+v, want acked at %v, read at %v", d, at(20), at(12))
	}
	if d := status(t, s, leased, "bob"); !d.ReadAt.Equal(at(20)) || d.Reader != "" {
		t.Errorf("status of an acked leased copy: got %+v, want read at %v, no reader", d, at(20))
	}
	// Ack of a copy still queued: carol never read it, and acks it anyway.
	if got, err := s.Ack(c, "ws", "carol", []string{queued.ID}, at(21)); err != nil || len(got) != 1 {
		t.Errorf("Ack of a queued copy: got %v, %v; want it acked", states(got), err)
	}
	if n, err := s.Unread(c, "ws", "carol", 3); err != nil || n != 0 {
		t.Errorf("carol's unread after ack: got %d, %v; want 0", n, err)
	}
	// Twice is nothing new; another recipient's or workspace's copy is not touched.
	if got, err := s.Ack(c, "ws", "bob", []string{queued.ID}, at(30)); err != nil || len(got) != 0 {
		t.Errorf("Ack again: got %v, %v; want nothing", states(got), err)
	}
	if got, err := s.Ack(c, "ws", "dave", []string{queued.ID}, at(30)); err != nil || len(got) != 0 {
		t.Errorf("Ack by a non-recipient: got %v, %v; want nothing", states(got), err)
	}
	if got, err := s.Ack(c, "other", "bob", []string{leased.ID}, at(30)); err != nil || len(got) != 0 {
		t.Errorf("Ack in another workspace: got %v, %v; want nothing", states(got), err)
	}
	if got, err := s.Confirm(c, "s1", nil, at(31)); err != nil || len(got) != 0 {
		t.Errorf("Confirm after Ack: got %v, %v; want nothing left leased", states(got), err)
	}
}

func testDeliveries(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	m := f.send("ws", "alice", hub.Normal, "hi", "dave", "bob", "carol")
	take(t, s, "ws", "bob", "s1", 1, at(10))
	take(t, s, "ws", "carol", "", 1, at(11))
	ds, err := s.Deliveries(c, "ws", m.ID)
	want := []string{st(m, hub.Delivered, 1), st(m, hub.Read, 1), st(m, hub.Queued, 0)}
	if err != nil || !slices.Equal(states(ds), want) {
		t.Fatalf("Deliveries: got %v, %v; want %v", states(ds), err, want)
	}
	var rs []string
	for _, d := range ds {
		rs = append(rs, d.Recipient)
		if d.Message != nil || d.Workspace != "ws" {
			t.Errorf("Deliveries: got %+v, want workspace ws and no message", d)
		}
	}
	if !slices.Equal(rs, []string{"bob", "carol", "dave"}) {
		t.Errorf("Deliveries order: got %v, want by recipient", rs)
	}
	if _, err := s.Deliveries(c, "ws", "no-such-id"); !hub.IsNotFound(err) {
		t.Errorf("Deliveries(unknown): got %v, want not found", err)
	}
	if _, err := s.Deliveries(c, "other", m.ID); !hub.IsNotFound(err) {
		t.Errorf("Deliveries(other workspace): got %v, want not found", err)
	}
}

func testDueAcksAndOverdue(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	send := func(ws, from, content string, deadline time.Time, to ...string) *hub.Message {
		m := f.msg(ws, from, hub.Normal, content)
		m.AckRequired, m.AckDeadline = true, deadline
		if err := s.CreateMessage(c, m, to); err != nil {
			t.Fatalf("CreateMessage: %v", err)
		}
		return m
	}
	a := send("ws", "alice", "a", at(60_000), "bob", "carol")
	b := send("ws", "alice", "b", at(30_000), "bob")
	cc := send("ws", "dave", "c", at(45_000), "bob")
	nodl := send("ws", "alice", "no deadline", time.Time{}, "bob")
	other := send("ws2", "alice", "elsewhere", at(10_000), "bob")
	f.send("ws", "alice", hub.Normal, "no ack asked", "bob")

	if due, err := s.DueAcks(c, at(5_000)); err != nil || len(due) != 0 {
		t.Errorf("DueAcks before any deadline: got %d, %v; want none", len(due), err)
	}
	// b is acked in time: past its deadline it is not reported.
	if _, err := s.Ack(c, "ws", "bob", []string{b.ID}, at(20_000)); err != nil {
		t.Fatal(err)
	}
	s.Ack(c, "ws", "carol", []string{a.ID}, at(20_000))
	due, err := s.DueAcks(c, at(50_000))
	if err != nil || len(due) != 2 {
		t.Fatalf("DueAcks at 50 s: got %d, %v; want elsewhere and c", len(due), err)
	}
	if due[0].Message.ID != other.ID || due[1].Message.ID != cc.ID || !slices.Equal(due[1].Pending, []string{"bob"}) {
		t.Errorf("DueAcks at 50 s: got %s %v, %s %v; want elsewhere [bob], c [bob] (by deadline)",
			due[0].Message.Content, due[0].Pending, due[1].Message.Content, due[1].Pending)
	}
	if due[1].Message.From != "dave" || !due[1].Message.AckDeadline.Equal(at(45_000)) {
		t.Errorf("DueAcks message: got %+v", due[1].Message)
	}
	// Each is reported once.
	due, err = s.DueAcks(c, at(70_000))
	if err != nil || len(due) != 1 || due[0].Message.ID != a.ID || !slices.Equal(due[0].Pending, []string{"bob"}) {
		t.Errorf("DueAcks at 70 s: got %v, %v; want only a, pending [bob]", due, err)
	}
	if due, err := s.DueAcks(c, at(1_000_000)); err != nil || len(due) != 0 {
		t.Errorf("DueAcks again: got %d, %v; want none", len(due), err)
	}
	// The overdue list stays until the acks come.
	od, err := s.Overdue(c, "ws", "", at(70_000))
	if err != nil || len(od) != 2 || od[0].Message.ID != cc.ID || od[1].Message.ID != a.ID {
		t.Fatalf("Overdue(ws): got %v, %v; want c then a", od, err)
	}
	if od, err := s.Overdue(c, "ws", "alice", at(70_000)); err != nil || len(od) != 1 || od[0].Message.ID != a.ID {
		t.Errorf("Overdue(ws, alice): got %v, %v; want a", od, err)
	}
	if od, err := s.Overdue(c, "ws", "", at(50_000)); err != nil || len(od) != 1 || od[0].Message.ID != cc.ID {
		t.Errorf("Overdue(ws) at 50 s: got %v, %v; want only c", od, err)
	}
	s.Ack(c, "ws", "bob", []string{a.ID, cc.ID, nodl.ID}, at(80_000))
	if od, err := s.Overdue(c, "ws", "", at(90_000)); err != nil || len(od) != 0 {
		t.Errorf("Overdue after the acks: got %v, %v; want none", od, err)
	}
}

func testUnacked(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	send := func(ws, from, content string, ack bool, to ...string) *hub.Message {
		m := f.msg(ws, from, hub.Normal, content)
		m.AckRequired = ack
		if err := s.CreateMessage(c, m, to); err != nil {
			t.Fatalf("CreateMessage: %v", err)
		}
		return m
	}
	a := send("ws", "alice", "a", true, "bob", "carol")
	b := send("ws", "alice", "b", true, "bob")
	send("ws", "alice", "no ack asked", false, "bob")
	send("ws", "dave", "dave's", true, "bob")
	send("ws2", "alice", "elsewhere", true, "bob")
	s.Ack(c, "ws", "carol", []string{a.ID}, at(1_000))
	od, err := s.Unacked(c, "ws", "alice", 10)
	if err != nil || len(od) != 2 || od[0].Message.ID != a.ID || od[1].Message.ID != b.ID {
		t.Fatalf("Unacked(ws, alice): got %v, %v; want a then b", od, err)
	}
	if !slices.Equal(od[0].Pending, []string{"bob"}) || !slices.Equal(od[1].Pending, []string{"bob"}) || !od[0].Message.AckRequired {
		t.Errorf("Unacked pending: got %v, %v; want bob each", od[0].Pending, od[1].Pending)
	}
	if od, err := s.Unacked(c, "ws", "alice", 1); err != nil || len(od) != 1 || od[0].Message.ID != a.ID {
		t.Errorf("Unacked limit 1: got %v, %v; want the oldest, a", od, err)
	}
	s.Ack(c, "ws", "bob", []string{a.ID}, at(2_000))
	if od, err := s.Unacked(c, "ws", "alice", 10); err != nil || len(od) != 1 || od[0].Message.ID != b.ID {
		t.Errorf("Unacked after bob acked a: got %v, %v; want b", od, err)
	}
	if od, err := s.Unacked(c, "ws", "nobody", 10); err != nil || len(od) != 0 {
		t.Errorf("Unacked of a sender of nothing: got %v, %v", od, err)
	}
}

func testClearInboxLeased(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	m1 := f.send("ws", "alice", hub.Normal, "one", "bob")
	m2 := f.send("ws", "alice", hub.Normal, "two", "bob")
	take(t, s, "ws", "bob", "s1", 1, at(10))
	if n, err := s.ClearInbox(c, "ws", "bob"); err != nil || n != 2 {
		t.Errorf("ClearInbox with one leased: got %d, %v; want 2", n, err)
	}
	for _, m := range []*hub.Message{m1, m2} {
		if d := status(t, s, m, "bob"); d.State != hub.Read || d.Reader != "" {
			t.Errorf("after ClearInbox: got %+v, want read, no reader", d)
		}
	}
	if got, err := s.Release(c, hub.ReleaseQuery{Reader: "s1"}); err != nil || len(got) != 0 {
		t.Errorf("Release after ClearInbox: got %v, %v; want nothing", states(got), err)
	}
}

// testWakePath: the first path that reaches the recipient stays the copy's
// wake path: a hand-out with Via, or NoteWake while it is in the inbox.
func testWakePath(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	m1 := f.send("ws", "alice", hub.Normal, "one", "bob")
	m2 := f.send("ws", "alice", hub.Normal, "two", "bob")
	m3 := f.send("ws", "alice", hub.Normal, "three", "bob")
	if d := status(t, s, m1, "bob"); d.WokeVia != "" || !d.WokeAt.IsZero() {
		t.Errorf("before any path: got %q at %v, want none", d.WokeVia, d.WokeAt)
	}
	// A hook tells bob of m1 and m2 (an unknown id is ignored).
	if n, err := s.NoteWake(c, "ws", "bob", []string{m1.ID, m2.ID, "nope"}, hub.WakeHook, "", at(5)); err != nil || n != 2 {
		t.Fatalf("NoteWake: got %d, %v; want 2", n, err)
	}
	// A second path does not replace the first.
	if n, err := s.NoteWake(c, "ws", "bob", []string{m1.ID}, hub.WakeTmux, "", at(6)); err != nil || n != 0 {
		t.Errorf("NoteWake again: got %d, %v; want 0", n, err)
	}
	ds, _, err := s.Take(c, hub.TakeQuery{Workspace: "ws", Recipient: "bob", Reader: "s1", MaxRank: hub.Low.Rank(), Limit: 3,
		Now: at(10), LeaseUntil: at(10).Add(time.Minute), Via: hub.WakeChannel})
	if err != nil || len(ds) != 3 {
		t.Fatalf("Take: got %v, %v; want 3", states(ds), err)
	}
	for _, tt := range []struct {
		m    *hub.Message
		via  hub.WakePath
		when time.Time
	}{{m1, hub.WakeHook, at(5)}, {m2, hub.WakeHook, at(5)}, {m3, hub.WakeChannel, at(10)}} {
		for _, d := range append(ds, status(t, s, tt.m, "bob")) {
			if d.MessageID == tt.m.ID && (d.WokeVia != tt.via || !d.WokeAt.Equal(tt.when)) {
				t.Errorf("%s: woke via %q at %v, want %q at %v", tt.m.Content, d.WokeVia, d.WokeAt, tt.via, tt.when)
			}
		}
	}
	// A copy out on lease is not in the inbox: NoteWake leaves it.
	m4 := f.send("ws", "alice", hub.Normal, "four", "bob")
	take(t, s, "ws", "bob", "s2", 1, at(20))
	if n, err := s.NoteWake(c, "ws", "bob", []string{m4.ID}, hub.WakeTmux, "", at(21)); err != nil || n != 0 {
		t.Errorf("NoteWake of a leased copy: got %d, %v; want 0", n, err)
	}
}

// testCompleteTask: CompleteTask confirms the task's copy held by one of the
// readers and stores its result, both or neither: a result that cannot be
// stored leaves the task claimed, and a task nobody holds gets no result.
func testCompleteTask(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	task := f.send("ws", "boss", hub.High, "build it", "queue:build")
	if got := take(t, s, "ws", "queue:build", "claimant-1", 1, at(10)); len(got) != 1 {
		t.Fatalf("claim: got %v", states(got))
	}
	result := func(content string) *hub.Message {
		m := f.msg("ws", "worker", hub.High, content)
		m.To, m.ReplyTo, m.ThreadID, m.CreatedAt = "boss", task.ID, task.ThreadID, at(20)
		m.Origin = hub.Origin{Role: "builder", Door: hub.DoorMCP, Task: task.ID}
		return m
	}
	// A result whose id is taken cannot be stored: the task stays claimed.
	dup := result("dup")
	dup.ID = task.ID
	if _, err := s.CompleteTask(c, []string{"claimant-1"}, task.ID, dup, "boss"); err == nil {
		t.Fatalf("CompleteTask with a result that cannot be stored: no error")
	}
	if d := status(t, s, task, "queue:build"); d.State != hub.Delivered || d.Reader != "claimant-1" {
		t.Fatalf("after a failed CompleteTask: the task's copy is %s (reader %q), want still delivered to claimant-1", d.State, d.Reader)
	}
	// Not held by these readers: nothing.
	if held, err := s.CompleteTask(c, []string{"someone-else"}, task.ID, result("not held"), "boss"); err != nil || len(held) != 0 {
		t.Fatalf("CompleteTask by readers that do not hold it: got %v, %v; want none", states(held), err)
	}
	ok := result("done well")
	held, err := s.CompleteTask(c, []string{"someone-else", "claimant-1"}, task.ID, ok, "boss")
	if err != nil || len(held) != 1 || held[0].MessageID != task.ID || held[0].State != hub.Read {
		t.Fatalf("CompleteTask by its claimant: got %v, %v; want the task's copy, read", states(held), err)
	}
	if again, err := s.CompleteTask(c, []string{"claimant-1"}, task.ID, result("twice"), "boss"); err != nil || len(again) != 0 {
		t.Errorf("CompleteTask twice: got %v, %v; want none", states(again), err)
	}
	got, err := s.Message(c, "ws", ok.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkMessage(t, "the result", got, ok)
	if d := status(t, s, ok, "boss"); d.State != hub.Queued {
		t.Errorf("the result's copy for boss: %s, want queued", d.State)
	}
	hist, err := s.History(c, "ws", hub.HistoryQuery{Thread: task.ThreadID})
	if err != nil || len(hist) != 2 {
		t.Errorf("the task's thread: got %d messages, %v; want the task and one result", len(hist), err)
	}
}
