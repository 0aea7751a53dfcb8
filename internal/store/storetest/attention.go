package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// The contract of doors and attention receipts: a client session's door,
// the seen mark of the copies its letters told of, and the bounce of what
// nothing reached within its time to live.

func door(id, agent string, kind hub.DoorKind, session, addr string, n int) *hub.SessionDoor {
	return &hub.SessionDoor{ID: id, Workspace: "ws", Agent: agent, Kind: kind, Session: session, Address: addr,
		Token: "tok-" + id, Owner: "mcp-" + id, Host: "h1", UID: 1000, OpenedAt: at(n), RefreshedAt: at(n)}
}

// testDoors: a door opens once per session, a registration of the same
// session refreshes it (keeping its id, opening time and, from a hook,
// its owner), it closes with a reason, and opens again when registered.
func testDoors(t *testing.T, s hub.Store) {
	c := ctx(t)
	d1, err := s.PutDoor(c, door("D1", "bob", hub.DoorClaude, "sess-1", "/tmp/cc-socks/1.sock", 1))
	if err != nil {
		t.Fatal(err)
	}
	if d1.ID != "D1" || d1.Kind != hub.DoorClaude || d1.Token != "tok-D1" || d1.Owner != "mcp-D1" || d1.UID != 1000 ||
		d1.Host != "h1" || !d1.OpenedAt.Equal(at(1)) || !d1.Open() {
		t.Errorf("PutDoor: got %+v", d1)
	}
	if _, err := s.PutDoor(c, door("D2", "bob", hub.DoorCodex, "thread-1", "/home/bob/.codex", 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutDoor(c, door("D3", "carol", hub.DoorClaude, "sess-3", "/tmp/cc-socks/3.sock", 3)); err != nil {
		t.Fatal(err)
	}
	// A hook of session 1 refreshes its door: a new address and token, no
	// owner of its own.
	re := door("D9", "bob", hub.DoorClaude, "sess-1", "/tmp/cc-socks/9.sock", 5)
	re.Owner, re.Token = "", "tok-new"
	d, err := s.PutDoor(c, re)
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != "D1" || !d.OpenedAt.Equal(at(1)) || !d.RefreshedAt.Equal(at(5)) || d.Address != "/tmp/cc-socks/9.sock" ||
		d.Token != "tok-new" || d.Owner != "mcp-D1" {
		t.Errorf("refresh: got %+v, want D1 opened at 1, refreshed at 5, the new address and token, owner kept", d)
	}
	list := func(agent string, closed bool) []string {
		t.Helper()
		ds, err := s.Doors(c, "ws", agent, closed)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range ds {
			out = append(out, d.ID)
		}
		return out
	}
	if got := list("bob", false); !slices.Equal(got, []string{"D2", "D1"}) {
		t.Errorf("bob's open doors: got %v, want D2, D1 (newest opened first)", got)
	}
	if got := list("", false); !slices.Equal(got, []string{"D3", "D2", "D1"}) {
		t.Errorf("every open door: got %v", got)
	}
	if ds, err := s.Doors(c, "other", "", true); err != nil || len(ds) != 0 {
		t.Errorf("another workspace's doors: got %v, %v; want none", ds, err)
	}

	closed, err := s.CloseDoor(c, "ws", "D1", hub.DoorClosedGone, at(7))
	if err != nil {
		t.Fatal(err)
	}
	if closed.Open() || !closed.ClosedAt.Equal(at(7)) || closed.CloseReason != hub.DoorClosedGone {
		t.Errorf("CloseDoor: got %+v", closed)
	}
	// Closing again changes nothing.
	again, err := s.CloseDoor(c, "ws", "D1", hub.DoorClosedSessionEnded, at(8))
	if err != nil || !again.ClosedAt.Equal(at(7)) || again.CloseReason != hub.DoorClosedGone {
		t.Errorf("CloseDoor again: got %+v, %v; want it as closed first", again, err)
	}
	wantKind(t, "CloseDoor of an unknown door", func() error { _, err := s.CloseDoor(c, "ws", "nope", "x", at(9)); return err }(), hub.NotFound)
	wantKind(t, "CloseDoor of another workspace's door", func() error { _, err := s.CloseDoor(c, "other", "D2", "x", at(9)); return err }(), hub.NotFound)
	if got := list("bob", false); !slices.Equal(got, []string{"D2"}) {
		t.Errorf("bob's open doors after the close: got %v, want D2", got)
	}
	if got := list("bob", true); !slices.Equal(got, []string{"D2", "D1"}) {
		t.Errorf("bob's doors with the closed: got %v, want D2, D1", got)
	}
	// The session registers again: the same door opens again.
	d, err = s.PutDoor(c, door("D10", "bob", hub.DoorClaude, "sess-1", "/tmp/cc-socks/1.sock", 10))
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != "D1" || !d.Open() || d.CloseReason != "" || d.Owner != "mcp-D10" {
		t.Errorf("reopen: got %+v, want D1 open, owner mcp-D10", d)
	}
	// A Codex door closed as not loaded is dormant: closed again as not
	// loaded it stays as it was; closed for another reason it ends.
	if d, err := s.CloseDoor(c, "ws", "D2", hub.DoorClosedNotLoaded, at(11)); err != nil || !d.Dormant() {
		t.Fatalf("dormant: got %+v, %v", d, err)
	}
	if d, err := s.CloseDoor(c, "ws", "D2", hub.DoorClosedNotLoaded, at(12)); err != nil || !d.Dormant() || !d.ClosedAt.Equal(at(11)) {
		t.Errorf("dormant again: got %+v, %v; want it as closed first", d, err)
	}
	if d, err := s.CloseDoor(c, "ws", "D2", hub.DoorClosedForgotten, at(13)); err != nil || d.Dormant() || d.CloseReason != hub.DoorClosedForgotten || !d.ClosedAt.Equal(at(13)) {
		t.Errorf("a dormant door forgotten: got %+v, %v; want it closed, agent forgotten", d, err)
	}
	if d, err := s.CloseDoor(c, "ws", "D2", hub.DoorClosedGone, at(14)); err != nil || d.CloseReason != hub.DoorClosedForgotten {
		t.Errorf("an ended door closed again: got %+v, %v; want it as it was", d, err)
	}
}

// testMarkLetter: what a client says of a letter changes the copies that
// letter told of, and no others: seen once; held with the client's words
// and until when, then released or declined; unconfirmed only where the
// client said nothing; not loaded for copies no letter reached; declined
// and bounced copies leave the inbox and come back with Redeliver.
func testMarkLetter(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	m1 := f.send("ws", "alice", hub.Normal, "one", "bob")
	m2 := f.send("ws", "alice", hub.Normal, "two", "bob")
	m3 := f.send("ws", "alice", hub.Normal, "three", "bob")
	m4 := f.send("ws", "alice", hub.Normal, "four", "bob", "carol")
	claude, codex := hub.DoorClaude.WakePath(), hub.DoorCodex.WakePath()
	for _, w := range []struct {
		who    string
		ids    []string
		via    hub.WakePath
		letter string
	}{{"bob", []string{m1.ID, m2.ID}, claude, "L1"}, {"bob", []string{m3.ID}, hub.WakeHook, ""}, {"bob", []string{m4.ID}, codex, "L2"},
		{"carol", []string{m4.ID}, claude, "L1"}} {
		if n, err := s.NoteWake(c, "ws", w.who, w.ids, w.via, w.letter, at(10)); err != nil || n != len(w.ids) {
			t.Fatalf("NoteWake %v: got %d, %v", w, n, err)
		}
	}
	if d := status(t, s, m1, "bob"); d.Letter != "L1" || d.WokeVia != claude || d.Door != "" {
		t.Errorf("m1 handed: got letter %q via %q door %q", d.Letter, d.WokeVia, d.Door)
	}
	ids := func(ds []*hub.Delivery) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.MessageID)
		}
		return out
	}
	mark := func(who, letter string, msgs []string, ch hub.LetterChange, n int) []*hub.Delivery {
		t.Helper()
		ds, err := s.MarkLetter(c, "ws", who, letter, msgs, ch, at(n))
		if err != nil {
			t.Fatalf("MarkLetter %s %s %s: %v", who, letter, ch.Mark, err)
		}
		return ds
	}
	// Held, with the client's words: L1's copies of bob alone.
	until := at(100)
	ds := mark("bob", "L1", nil, hub.LetterChange{Mark: hub.MarkHeld, Note: "no-mode-asserted", Until: until}, 11)
	if got := ids(ds); !slices.Equal(got, []string{m1.ID, m2.ID}) || ds[0].Door != hub.DoorHeld || ds[0].DoorNote != "no-mode-asserted" ||
		!ds[0].DoorUntil.Equal(until) || !ds[0].DoorAt.Equal(at(11)) {
		t.Fatalf("held: got %v %+v, want m1, m2 held until 100", got, ds[0])
	}
	if d := status(t, s, m2, "bob"); d.Door != hub.DoorHeld || d.DoorNote != "no-mode-asserted" || !d.DoorUntil.Equal(until) || d.State != hub.Queued {
		t.Errorf("m2 held, as stored: got %+v", d)
	}
	if d := status(t, s, m4, "carol"); d.Door != "" {
		t.Errorf("carol's copy of L1: door %q, want none (bob's letter was held)", d.Door)
	}
	// Unconfirmed does not overwrite what the client said.
	if ds := mark("bob", "L1", nil, hub.LetterChange{Mark: hub.MarkUnconfirmed}, 12); len(ds) != 0 {
		t.Errorf("unconfirmed over held: got %v, want nothing", ids(ds))
	}
	// Released: handed again; then seen, once.
	if ds := mark("bob", "L1", nil, hub.LetterChange{Mark: hub.MarkReleased}, 13); !slices.Equal(ids(ds), []string{m1.ID, m2.ID}) || ds[0].Door != "" {
		t.Errorf("released: got %v", ids(ds))
	}
	if ds := mark("bob", "L1", nil, hub.LetterChange{Mark: hub.MarkReleased}, 14); len(ds) != 0 {
		t.Errorf("released twice: got %v, want nothing", ids(ds))
	}
	ds = mark("bob", "L1", nil, hub.LetterChange{Mark: hub.MarkSeen}, 16)
	if !slices.Equal(ids(ds), []string{m1.ID, m2.ID}) || !ds[0].SeenAt.Equal(at(16)) {
		t.Fatalf("seen: got %v", ids(ds))
	}
	if d := status(t, s, m1, "bob"); !d.SeenAt.Equal(at(16)) || d.State != hub.Queued || d.Door != "" {
		t.Errorf("m1 seen, as stored: got %+v", d)
	}
	if ds := mark("bob", "L1", nil, hub.LetterChange{Mark: hub.MarkSeen}, 17); len(ds) != 0 {
		t.Errorf("seen again: got %v, want nothing", ids(ds))
	}
	if d := status(t, s, m3, "bob"); !d.SeenAt.IsZero() || d.Letter != "" {
		t.Errorf("the hook's copy: got %+v, want no letter, never seen", d)
	}
	// L2 is unconfirmed, then seen after all (a late hook); seen outranks.
	if ds := mark("bob", "L2", nil, hub.LetterChange{Mark: hub.MarkUnconfirmed}, 18); !slices.Equal(ids(ds), []string{m4.ID}) || ds[0].Door != hub.DoorUnconfirmed {
		t.Errorf("unconfirmed: got %v", ids(ds))
	}
	if ds := mark("bob", "L2", nil, hub.LetterChange{Mark: hub.MarkSeen}, 19); len(ds) != 1 || ds[0].Door != "" {
		t.Errorf("seen after unconfirmed: got %v", ids(ds))
	}
	// Not loaded: copies no path reached take the note; a reached one
	// does not; a later letter clears it.
	m5 := f.send("ws", "alice", hub.Normal, "five", "bob")
	ds = mark("bob", "L3", []string{m5.ID, m3.ID}, hub.LetterChange{Mark: hub.MarkNotLoaded, Note: "thread not loaded"}, 20)
	if !slices.Equal(ids(ds), []string{m5.ID}) || ds[0].Door != hub.DoorNotLoaded || ds[0].Letter != "L3" {
		t.Fatalf("not loaded: got %v, want m5 (m3 was reached by a hook)", ids(ds))
	}
	if n, err := s.NoteWake(c, "ws", "bob", []string{m5.ID}, codex, "L4", at(21)); err != nil || n != 1 {
		t.Fatalf("NoteWake after not loaded: %d, %v", n, err)
	}
	if d := status(t, s, m5, "bob"); d.Door != "" || d.DoorNote != "" || d.Letter != "L4" {
		t.Errorf("m5 handed after not loaded: got %+v, want letter L4, no door state", d)
	}
	// Declined: out of the inbox, Declined, listed with the dead letters;
	// a leased copy stays.
	take(t, s, "ws", "carol", "rc", 1, at(22))
	if ds := mark("carol", "L1", nil, hub.LetterChange{Mark: hub.MarkDeclined, Note: "declined"}, 23); len(ds) != 0 {
		t.Errorf("declined while leased: got %v, want nothing", ids(ds))
	}
	ds = mark("bob", "L4", nil, hub.LetterChange{Mark: hub.MarkDeclined, Note: "declined by the person"}, 24)
	if len(ds) != 1 || ds[0].State != hub.Declined || ds[0].BounceReason != "declined by the person" || !ds[0].BouncedAt.Equal(at(24)) {
		t.Fatalf("declined: got %+v", ds)
	}
	if d := status(t, s, m5, "bob"); d.State != hub.Declined || d.Door != hub.DoorDeclined || d.BounceReason != "declined by the person" {
		t.Errorf("m5 declined, as stored: got %+v", d)
	}
	dead, err := s.Bounced(c, "ws", "alice", 10)
	if err != nil || len(dead) != 1 || dead[0].MessageID != m5.ID || dead[0].State != hub.Declined {
		t.Errorf("Bounced with a declined copy: got %v, %v", states(dead), err)
	}
	// Bounced by the client (dropped): the same, Bounced.
	m6 := f.send("ws", "alice", hub.Normal, "six", "bob")
	if _, err := s.NoteWake(c, "ws", "bob", []string{m6.ID}, claude, "L5", at(25)); err != nil {
		t.Fatal(err)
	}
	if ds := mark("bob", "L5", nil, hub.LetterChange{Mark: hub.MarkBounced, Note: "dropped: queue full"}, 26); len(ds) != 1 || ds[0].State != hub.Bounced {
		t.Errorf("bounced: got %v", states(ds))
	}
	// Orphaned: the held copies of a letter whose word can no longer come
	// turn unconfirmed; a copy not held (L6 seen) does not.
	m7 := f.send("ws", "alice", hub.Normal, "seven", "bob")
	if _, err := s.NoteWake(c, "ws", "bob", []string{m7.ID}, claude, "L6", at(27)); err != nil {
		t.Fatal(err)
	}
	if ds := mark("bob", "L6", nil, hub.LetterChange{Mark: hub.MarkOrphaned, Note: "restarted"}, 28); len(ds) != 0 {
		t.Errorf("orphaned, not held: got %v, want nothing", ids(ds))
	}
	mark("bob", "L6", nil, hub.LetterChange{Mark: hub.MarkHeld, Note: "no-mode-asserted", Until: at(100)}, 29)
	ds = mark("bob", "L6", nil, hub.LetterChange{Mark: hub.MarkOrphaned, Note: "restarted"}, 30)
	if len(ds) != 1 || ds[0].Door != hub.DoorUnconfirmed || ds[0].DoorNote != "restarted" || !ds[0].DoorUntil.IsZero() {
		t.Errorf("orphaned: got %+v", ds)
	}
	if d := status(t, s, m7, "bob"); d.Door != hub.DoorUnconfirmed || d.DoorNote != "restarted" || !d.DoorAt.Equal(at(30)) || !d.DoorUntil.IsZero() || d.State != hub.Queued {
		t.Errorf("m7 orphaned, as stored: got %+v", d)
	}
	if ds, err := s.Peek(c, "ws", "bob", 10); err != nil || slices.ContainsFunc(ds, func(d *hub.Delivery) bool { return d.MessageID == m5.ID || d.MessageID == m6.ID }) {
		t.Errorf("bob's inbox holds a declined or bounced copy: %v, %v", states(ds), err)
	}
	// Redeliver: back in the inbox as new.
	d, err := s.Redeliver(c, "ws", "bob", m5.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.State != hub.Queued || d.WokeVia != "" || d.Letter != "" || d.Door != "" || !d.BouncedAt.IsZero() || !d.ReadAt.IsZero() {
		t.Errorf("Redeliver: got %+v", d)
	}
	if got := status(t, s, m5, "bob"); got.State != hub.Queued || got.Door != "" || got.BounceReason != "" || !got.SeenAt.IsZero() {
		t.Errorf("m5 redelivered, as stored: got %+v", got)
	}
	if ds, err := s.Peek(c, "ws", "bob", 10); err != nil || !slices.ContainsFunc(ds, func(d *hub.Delivery) bool { return d.MessageID == m5.ID }) {
		t.Errorf("bob's inbox after Redeliver lacks m5: %v, %v", states(ds), err)
	}
	wantKind(t, "Redeliver of a copy in the inbox", func() error { _, err := s.Redeliver(c, "ws", "bob", m5.ID); return err }(), hub.NotFound)
	wantKind(t, "Redeliver of an unknown message", func() error { _, err := s.Redeliver(c, "ws", "bob", "nope"); return err }(), hub.NotFound)
	wantKind(t, "Redeliver in another workspace", func() error { _, err := s.Redeliver(c, "other", "bob", m6.ID); return err }(), hub.NotFound)
	// Seen survives a read.
	take(t, s, "ws", "bob", "", 10, at(40))
	if d := status(t, s, m1, "bob"); d.State != hub.Read || !d.SeenAt.Equal(at(16)) {
		t.Errorf("m1 read: got %s seen %v, want read, seen at 16", d.State, d.SeenAt)
	}
}

// testExpiryOrder: each message's expiry is reported once, when its time
// comes, whatever the order of the times to live: the default one (whose
// expiries rise with the order of sending), a shorter one after it, one
// past hub.DefaultTTL, none, and handed copies between them.
func testExpiryOrder(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	mk := func(ttl time.Duration, handed bool) *hub.Message {
		m := f.msg("ws", "alice", hub.Normal, "ttl "+ttl.String())
		m.To = "bob"
		if ttl > 0 {
			m.ExpiresAt = m.CreatedAt.Add(ttl)
		}
		var hs []hub.Handoff
		if handed {
			hs = []hub.Handoff{{Recipient: "bob", Reader: "r-" + m.ID, Now: m.CreatedAt, LeaseUntil: m.CreatedAt.Add(time.Minute)}}
		}
		if err := s.CreateMessage(c, m, []string{"bob"}, hs...); err != nil {
			t.Fatal(err)
		}
		return m
	}
	day := hub.DefaultTTL
	d1 := mk(day, false)
	short := mk(time.Hour, false) // expires long before d1
	mk(day, true)                 // handed: nothing to report
	long := mk(3*day, false)
	none := mk(0, false)
	d2 := mk(day, false)
	shorter := mk(time.Minute, false)
	d3 := mk(day, false)
	_ = none

	// Each step's time reports exactly the messages whose time came since
	// the step before, whatever their order of sending.
	steps := []struct {
		at   time.Time
		want []*hub.Message
	}{
		{shorter.ExpiresAt.Add(-time.Millisecond), nil},
		{shorter.ExpiresAt, []*hub.Message{shorter}},
		{short.ExpiresAt, []*hub.Message{short}},
		{d1.ExpiresAt.Add(-time.Millisecond), nil},
		{d2.ExpiresAt, []*hub.Message{d1, d2}},
		{d3.ExpiresAt, []*hub.Message{d3}},
		{long.ExpiresAt.Add(-time.Millisecond), nil},
		{long.ExpiresAt.Add(365 * day), []*hub.Message{long}},
	}
	for i, st := range steps {
		ds, err := s.DueExpiries(c, st.at)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		var got, want []string
		for _, d := range ds {
			got = append(got, d.MessageID)
		}
		for _, m := range st.want {
			want = append(want, m.ID)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("step %d (at %s): due %v, want %v", i, st.at.Format(time.RFC3339Nano), got, want)
		}
	}
}

// testExpiryAndBounce: a message's time to live and delivery mode are kept;
// once the time to live ends, the copies nothing reached are reported once,
// and Bounce takes those still in the inbox out of it.
func testExpiryAndBounce(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	mk := func(content string, ttl time.Duration, to ...string) *hub.Message {
		m := f.msg("ws", "alice", hub.High, content)
		m.To, m.Deliver = "x", hub.DeliverIdle
		if ttl > 0 {
			m.ExpiresAt = m.CreatedAt.Add(ttl)
		}
		if err := s.CreateMessage(c, m, to); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m1 := mk("to three", 100*time.Millisecond, "bob", "carol", "dave", "erin")
	m2 := mk("later", time.Hour, "bob")
	m3 := mk("forever", 0, "bob")
	if got, err := s.Message(c, "ws", m1.ID); err != nil || !got.ExpiresAt.Equal(m1.ExpiresAt) || got.Deliver != hub.DeliverIdle {
		t.Errorf("round trip: got %+v, %v; want expires %v, deliver idle", got, err, m1.ExpiresAt)
	}
	if got, err := s.Message(c, "ws", m3.ID); err != nil || !got.ExpiresAt.IsZero() {
		t.Errorf("no time to live: got expires %v, %v", got.ExpiresAt, err)
	}
	// Before m1's end nothing is due.
	if ds, err := s.DueExpiries(c, m1.ExpiresAt.Add(-time.Millisecond)); err != nil || len(ds) != 0 {
		t.Fatalf("DueExpiries before: got %v, %v", states(ds), err)
	}
	// carol's copy was handed out (and came back), dave's was told of by a
	// hook, erin read hers: something reached them. bob's was not reached.
	take(t, s, "ws", "carol", "r1", 1, at(3))
	if _, err := s.Release(c, hub.ReleaseQuery{Reader: "r1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.NoteWake(c, "ws", "dave", []string{m1.ID}, hub.WakeHook, "", at(4)); err != nil {
		t.Fatal(err)
	}
	take(t, s, "ws", "erin", "", 1, at(5))
	due, err := s.DueExpiries(c, m1.ExpiresAt)
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 1 || due[0].Recipient != "bob" || due[0].MessageID != m1.ID || due[0].Message == nil || due[0].Message.Content != "to three" {
		t.Fatalf("DueExpiries: got %v, want bob's copy of m1 with its message", states(due))
	}
	// Reported once.
	if ds, err := s.DueExpiries(c, m2.ExpiresAt.Add(time.Minute)); err != nil || len(ds) != 1 || ds[0].MessageID != m2.ID {
		t.Fatalf("DueExpiries later: got %v, %v; want m2 alone", states(ds), err)
	}
	if ds, err := s.DueExpiries(c, m2.ExpiresAt.Add(time.Hour)); err != nil || len(ds) != 0 {
		t.Errorf("DueExpiries again: got %v, %v; want nothing", states(ds), err)
	}
	// Copies handed to waiting readers as they are sent were reached, even
	// if they come back unread: of a message to fay and gus with fay's
	// handed out, gus's copy is due; of one handed to fay alone, nothing.
	handed := func(content string, to ...string) *hub.Message {
		m := f.msg("ws", "alice", hub.High, content)
		m.To, m.ExpiresAt = "x", m.CreatedAt.Add(time.Millisecond)
		h := hub.Handoff{Recipient: "fay", Reader: "rh", Now: m.CreatedAt, LeaseUntil: m.CreatedAt.Add(time.Minute)}
		if err := s.CreateMessage(c, m, to, h); err != nil {
			t.Fatal(err)
		}
		return m
	}
	both, alone := handed("to fay and gus", "fay", "gus"), handed("to fay", "fay")
	if _, err := s.Release(c, hub.ReleaseQuery{Reader: "rh"}); err != nil {
		t.Fatal(err)
	}
	if ds, err := s.DueExpiries(c, alone.ExpiresAt.Add(time.Hour)); err != nil || len(ds) != 1 || ds[0].MessageID != both.ID || ds[0].Recipient != "gus" {
		t.Errorf("DueExpiries of handed copies: got %v, %v; want gus's copy of %s alone", states(ds), err, both.ID)
	}

	// A reader takes bob's first copy (m1) before the bounce: a leased
	// copy is not in the inbox, and stays.
	m4 := f.send("ws", "alice", hub.Normal, "normal", "bob")
	take(t, s, "ws", "bob", "r2", 1, at(50))
	bounced, err := s.Bounce(c, "ws", "bob", []string{m1.ID, m2.ID, m4.ID, "nope"}, hub.BounceNoReader, at(60))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range bounced {
		got = append(got, d.MessageID)
		if d.State != hub.Bounced || !d.BouncedAt.Equal(at(60)) || d.BounceReason != hub.BounceNoReader {
			t.Errorf("bounced copy: got %+v", d)
		}
	}
	if !slices.Equal(got, []string{m2.ID, m4.ID}) {
		t.Fatalf("Bounce: got %v, want m2 and m4 (m1 is leased)", got)
	}
	if d := status(t, s, m2, "bob"); d.State != hub.Bounced || d.BounceReason != hub.BounceNoReader || !d.BouncedAt.Equal(at(60)) {
		t.Errorf("m2 after Bounce: got %+v", d)
	}
	if n, err := s.Unread(c, "ws", "bob", hub.Low.Rank()); err != nil || n != 1 {
		t.Errorf("bob's unread after the bounce: got %d, %v; want 1 (forever)", n, err)
	}
	if ds, err := s.Peek(c, "ws", "bob", 10); err != nil || len(ds) != 1 || ds[0].MessageID != m3.ID {
		t.Errorf("bob's inbox after the bounce: got %v, %v; want m3 alone", states(ds), err)
	}
	// A bounced copy is not given back to the inbox, and not bounced twice.
	if ds, err := s.Reopen(c, "ws", "bob", []string{m2.ID}); err != nil || len(ds) != 0 {
		t.Errorf("Reopen of a bounced copy: got %v, %v; want nothing", states(ds), err)
	}
	if ds, err := s.Bounce(c, "ws", "bob", []string{m2.ID}, "again", at(70)); err != nil || len(ds) != 0 {
		t.Errorf("Bounce again: got %v, %v; want nothing", states(ds), err)
	}
	// The dead letters, newest bounce first, with their messages.
	f.send("other", "alice", hub.Normal, "elsewhere", "zed")
	dead, err := s.Bounced(c, "ws", "alice", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 2 || dead[0].Message == nil || dead[0].BounceReason != hub.BounceNoReader {
		t.Fatalf("Bounced: got %v, want two with their messages", states(dead))
	}
	if ds, err := s.Bounced(c, "ws", "nobody", 10); err != nil || len(ds) != 0 {
		t.Errorf("Bounced of another sender: got %v, %v", states(ds), err)
	}
	if ds, err := s.Bounced(c, "ws", "", 1); err != nil || len(ds) != 1 {
		t.Errorf("Bounced limit 1: got %v, %v", states(ds), err)
	}
}
