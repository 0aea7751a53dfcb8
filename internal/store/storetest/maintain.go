package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// runPurge runs the contract of hub.Store's Purge: old messages every recipient has
// read go, in more than one batch, with their deliveries; unread or recent
// ones stay, and so do those awaiting an ack they asked for until it is in
// or given up on; a second purge finds nothing.
func runPurge(t *testing.T, open func(t *testing.T) hub.Store) {
	s := open(t)
	t.Cleanup(func() { s.Close() })
	p := s
	c := ctx(t)
	now := time.Now().UTC()
	old := now.Add(-48 * time.Hour)
	add := func(id string, at time.Time, to ...string) {
		t.Helper()
		m := &hub.Message{ID: id, Workspace: "ws", From: "a", To: to[0], Content: "purge me " + id, Priority: hub.Normal, CreatedAt: at,
			Metadata: map[string]string{"k": "needle"}, Payload: []byte(`{"p":"haystack"}`)}
		if err := s.CreateMessage(c, m, to); err != nil {
			t.Fatal(err)
		}
	}
	clear := func(recipient string) {
		t.Helper()
		if _, err := s.ClearInbox(c, "ws", recipient); err != nil {
			t.Fatal(err)
		}
	}
	// Old and read by all, more than any batch: purged.
	const many = 1207
	for i := range many {
		add(fmt.Sprintf("01K%023d", i), old.Add(time.Duration(i)*time.Millisecond), "b", "c")
	}
	clear("b")
	clear("c")
	// Old but unread by d (read by b): kept, however old.
	add("01KOLDUNREAD00000000000000", old, "b", "d")
	clear("b")
	// Old and read, in another workspace: purged too. (Messages arrive in
	// time order: a store may stop its walk at the first recent one.)
	if err := s.CreateMessage(c, &hub.Message{ID: "01KOTHERWS0000000000000000", Workspace: "other", From: "a", To: "b",
		Content: "x", Priority: hub.Normal, CreatedAt: old}, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClearInbox(c, "other", "b"); err != nil {
		t.Fatal(err)
	}

	// Old and read, asking for acks: kept until every ack is in, or until
	// its deadline is before AckGivenUp and its sender was told. (Messages
	// arrive in time order: these come before the new one below.)
	acks := func(id string, deadline time.Duration) {
		t.Helper()
		m := &hub.Message{ID: id, Workspace: "ws", From: "a", To: "b", Content: "ack me " + id, Priority: hub.Normal,
			CreatedAt: old.Add(time.Hour), AckRequired: true}
		if deadline != 0 {
			m.AckDeadline = old.Add(deadline)
		}
		if err := s.CreateMessage(c, m, []string{"b"}); err != nil {
			t.Fatal(err)
		}
	}
	acks("01KACKED000000000000000000", 0)              // acked: purged
	acks("01KAWAITED0000000000000000", 0)              // no deadline, not acked: kept
	acks("01KGIVENUP0000000000000000", 10*time.Minute) // told, past the grace: purged
	acks("01KINGRACE0000000000000000", 12*time.Minute) // told, within the grace: kept
	acks("01KNOTTOLD0000000000000000", 20*time.Minute) // past its deadline, sender not told yet: kept
	clear("b")
	if _, err := s.Ack(c, "ws", "b", []string{"01KACKED000000000000000000"}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DueAcks(c, old.Add(15*time.Minute)); err != nil { // tells the senders of the first two deadlines
		t.Fatal(err)
	}

	// New and read: kept.
	add("01KNEWREAD0000000000000000", now, "b")
	clear("b")

	res, err := p.Purge(c, hub.PurgeQuery{Before: now.Add(-24 * time.Hour), AckGivenUp: old.Add(11 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if want := (hub.PurgeResult{Messages: many + 3, Deliveries: 2*many + 3}); res != want {
		t.Errorf("Purge: got %+v, want %+v", res, want)
	}
	for _, id := range []string{"01KACKED000000000000000000", "01KGIVENUP0000000000000000"} {
		if _, err := s.Message(c, "ws", id); hub.KindOf(err) != hub.NotFound {
			t.Errorf("message %s, acked or given up on: got %v, want it purged", id, err)
		}
	}
	for _, id := range []string{"01KOLDUNREAD00000000000000", "01KNEWREAD0000000000000000",
		"01KAWAITED0000000000000000", "01KINGRACE0000000000000000", "01KNOTTOLD0000000000000000"} {
		if _, err := s.Message(c, "ws", id); err != nil {
			t.Errorf("message %s: %v, want it kept", id, err)
		}
	}
	for _, id := range []string{fmt.Sprintf("01K%023d", 0), fmt.Sprintf("01K%023d", many-1)} {
		if _, err := s.Message(c, "ws", id); hub.KindOf(err) != hub.NotFound {
			t.Errorf("old read message %s: got %v, want it purged", id, err)
		}
	}
	if n, _ := s.Unread(c, "ws", "d", 3); n != 1 {
		t.Errorf("d's unread: got %d, want 1", n)
	}
	if ms, err := s.History(c, "ws", hub.HistoryQuery{Limit: 1000}); err != nil || len(ms) != 5 {
		t.Errorf("history after the purge: got %d messages (%v), want the 5 kept", len(ms), err)
	}
	{
		hits, err := s.Search(c, "ws", hub.SearchQuery{Terms: []hub.SearchTerm{{Words: []string{"purge"}}}, Limit: 100})
		if err != nil || len(hits) != 2 {
			t.Errorf("search after the purge: %d hits (%v), want the 2 kept messages", len(hits), err)
		}
	}
	if res, err := p.Purge(c, hub.PurgeQuery{Before: now.Add(-24 * time.Hour), AckGivenUp: old.Add(11 * time.Minute)}); err != nil || res != (hub.PurgeResult{}) {
		t.Errorf("second Purge: got %+v %v, want nothing", res, err)
	}
}

// runPurgeKeepsKeys: a purge keeps a read message sent with an idempotency
// key until KeyedBefore, whatever Before says, so that a retry within the
// key's window finds its first send; a message without one goes at Before.
func runPurgeKeepsKeys(t *testing.T, open func(t *testing.T) hub.Store) {
	s := open(t)
	t.Cleanup(func() { s.Close() })
	c := ctx(t)
	now := time.Now().UTC()
	sent := now.Add(-2 * time.Hour)
	for _, m := range []*hub.Message{
		{ID: "01KPLAIN000000000000000000", Workspace: "ws", From: "a", To: "b", Content: "plain", Priority: hub.Normal, CreatedAt: sent},
		{ID: "01KKEYED000000000000000000", Workspace: "ws", From: "a", To: "b", Content: "keyed", Priority: hub.Normal, CreatedAt: sent.Add(time.Millisecond),
			IdempotencyKey: "retry-me"},
	} {
		if err := s.CreateMessage(c, m, []string{"b"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ClearInbox(c, "ws", "b"); err != nil {
		t.Fatal(err)
	}
	res, err := s.Purge(c, hub.PurgeQuery{Before: now.Add(-time.Hour), KeyedBefore: now.Add(-hub.IdempotencyWindow)})
	if err != nil || res.Messages != 1 {
		t.Errorf("purge of messages older than 1h: %+v, %v; want the plain one only", res, err)
	}
	if m, err := s.MessageByKey(c, "ws", "a", "retry-me"); err != nil || m.ID != "01KKEYED000000000000000000" {
		t.Errorf("the keyed message after a purge within its key's window: %v, %v; want it kept", m, err)
	}
	if _, err := s.Message(c, "ws", "01KPLAIN000000000000000000"); hub.KindOf(err) != hub.NotFound {
		t.Errorf("the plain message after the purge: %v, want it gone", err)
	}
	if res, err := s.Purge(c, hub.PurgeQuery{Before: now.Add(-time.Hour), KeyedBefore: now.Add(-time.Hour)}); err != nil || res.Messages != 1 {
		t.Errorf("purge once the key's window is over: %+v, %v; want the keyed message gone", res, err)
	}
}
