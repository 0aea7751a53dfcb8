package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/permission"
	"github.com/parley-dev/parley/internal/store/postgres/pgtest"
)

// daemonHub is one daemon's half: its own store connection, notifier and hub,
// on a database another daemonHub shares.
type daemonHub struct {
	db  *DB
	n   *Notifier
	hub *hub.Hub
}

func newDaemonHub(t *testing.T, dsn string) *daemonHub {
	t.Helper()
	db, err := Open(t.Context(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := db.NewNotifier()
	h := hub.New(db, &hub.Options{Notifier: n})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx, h); close(done) }()
	t.Cleanup(func() { cancel(); <-done; db.Close() })
	waitFor(t, "notifier listening", n.Listening)
	return &daemonHub{db: db, n: n, hub: h}
}

// waitFor polls cond, which depends on another process (PostgreSQL), until it
// holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitAsync starts a wait for agent on h and returns where its result arrives.
func waitAsync(h *hub.Hub, ws, agent string) <-chan *hub.Message {
	got := make(chan *hub.Message, 1)
	go func() {
		m, _ := h.Wait(context.Background(), hub.WaitRequest{Workspace: ws, Agent: agent, Timeout: 30 * time.Second})
		got <- m
	}()
	return got
}

func recv(t *testing.T, what string, ch <-chan *hub.Message) *hub.Message {
	t.Helper()
	select {
	case m := <-ch:
		if m == nil {
			t.Fatalf("%s: the wait timed out", what)
		}
		return m
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no wake-up within 20 s", what)
	}
	return nil
}

// TestCrossDaemonWake: a send through one daemon's hub wakes a wait on
// another's, through LISTEN/NOTIFY alone (the waiting hub polls nothing).
func TestCrossDaemonWake(t *testing.T) {
	dsn := pgtest.Database(t)
	a, b := newDaemonHub(t, dsn), newDaemonHub(t, dsn)
	for i := range 20 {
		got := waitAsync(b.hub, "ws", "bob")
		waitFor(t, "bob's wait registered", func() bool { return b.hub.Waiters("ws", "bob") == 1 })
		want := fmt.Sprint("hello ", i)
		if _, err := a.hub.Send(t.Context(), hub.SendRequest{Workspace: "ws", From: "alice", To: "bob", Content: want}); err != nil {
			t.Fatal(err)
		}
		if m := recv(t, "cross-daemon wait", got); m.Content != want {
			t.Fatalf("woke with %q, want %q", m.Content, want)
		}
	}
}

// TestListenConnectionKilled: the listening connection is terminated by the
// server; sends meanwhile still reach the waiters of the other daemon, and
// the notifier listens again.
func TestListenConnectionKilled(t *testing.T) {
	dsn := pgtest.Database(t)
	a, b := newDaemonHub(t, dsn), newDaemonHub(t, dsn)
	ctx := t.Context()
	const rounds = 10
	for i := range rounds {
		got := waitAsync(b.hub, "ws", "bob")
		waitFor(t, "bob's wait registered", func() bool { return b.hub.Waiters("ws", "bob") == 1 })
		// Kill every listening connection of the database (both daemons'),
		// then send at once, while they are down or coming back.
		var killed int
		if err := a.db.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND query = 'LISTEN `+channel+`'`).Scan(&killed); err != nil {
			t.Fatal(err)
		}
		if killed == 0 {
			t.Fatalf("round %d: no listening connection to kill", i)
		}
		want := fmt.Sprint("during the cut ", i)
		if _, err := a.hub.Send(ctx, hub.SendRequest{Workspace: "ws", From: "alice", To: "bob", Content: want}); err != nil {
			t.Fatal(err)
		}
		if m := recv(t, "wait across a killed LISTEN connection", got); m.Content != want {
			t.Fatalf("woke with %q, want %q", m.Content, want)
		}
	}
	waitFor(t, "listening again", func() bool { return a.n.Listening() && b.n.Listening() })
	if b.n.Reconnects.Load() == 0 {
		t.Errorf("reconnects of the waiting daemon's listener: got 0, want at least 1")
	}
}

// TestCrossDaemonPermission: an agent's permission request filed on daemon A
// is listed and decided on daemon B, and A's waiting agent hears the decision
// through the event B announces at once, not at its timeout (the daemon
// wires its permission inbox to its hub this way).
func TestCrossDaemonPermission(t *testing.T) {
	dsn := pgtest.Database(t)
	a, b := newDaemonHub(t, dsn), newDaemonHub(t, dsn)
	inA, inB := permission.New(a.db, nil), permission.New(b.db, nil)
	const resolved = hub.EventKind(permission.EventResolved)
	inB.Subscribe(func(e permission.Event) {
		if e.Kind == permission.EventResolved {
			b.hub.Publish(hub.Event{Kind: resolved, Workspace: e.Request.Workspace, Agent: e.Request.Agent,
				Detail: []byte(fmt.Sprintf(`{"id":%q}`, e.Request.ID))})
		}
	})
	defer a.hub.Subscribe(func(e hub.Event) {
		var d struct{ ID string }
		if e.Kind == resolved && e.Remote && json.Unmarshal(e.Detail, &d) == nil {
			inA.Wake(d.ID)
		}
	})()

	got := make(chan *permission.Request, 1)
	go func() {
		r, err := inA.Ask(context.Background(), permission.Request{Workspace: "ws", Agent: "alice", Source: permission.SourceManaged,
			Tool: "Bash", Input: []byte(`{"command":"ls"}`)}, time.Minute)
		if err != nil {
			t.Errorf("ask on A: %v", err)
		}
		got <- r
	}()
	var pending []*permission.Request
	waitFor(t, "the request listed on B", func() bool {
		var err error
		pending, err = inB.Pending(t.Context(), "ws")
		return err == nil && len(pending) == 1
	})
	start := time.Now()
	if _, err := inB.Decide(t.Context(), "ws", pending[0].ID, permission.Decision{Allow: true, By: "cli"}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r == nil || r.State != permission.Allowed {
			t.Fatalf("A's request after B allowed it: got %+v, want allowed", r)
		}
		t.Logf("decided on B, heard on A after %v", time.Since(start))
	case <-time.After(20 * time.Second):
		t.Fatal("A's request was not woken by B's decision within 20 s")
	}
}

// TestWaitAcrossRestart: a wait blocked while PostgreSQL restarts stays
// blocked through the outage, though woken in the middle of it, and returns
// the message sent once the server is back.
func TestWaitAcrossRestart(t *testing.T) {
	c := pgtest.Private(t)
	a, b := newDaemonHub(t, c.DSN("postgres")), newDaemonHub(t, c.DSN("postgres"))

	// Progress is called only from the blocked wait's sleep, so its first
	// call says the wait has looked once and blocked.
	blocked := make(chan struct{})
	var once sync.Once
	type result struct {
		m   *hub.Message
		err error
	}
	got := make(chan result, 1)
	go func() {
		m, err := b.hub.Wait(t.Context(), hub.WaitRequest{Workspace: "w", Agent: "wally", Timeout: time.Minute,
			ProgressEvery: time.Millisecond, Progress: func(time.Duration) { once.Do(func() { close(blocked) }) }})
		got <- result{m, err}
	}()
	<-blocked
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the listener to notice the stop", func() bool { return !b.n.Listening() })
	b.hub.WakeAll() // a wake-up during the outage: the look fails, the wait stays
	if _, err := a.hub.Send(t.Context(), hub.SendRequest{Workspace: "w", From: "ann", To: "wally", Content: "down"}); hub.KindOf(err) != hub.Unavailable {
		t.Fatalf("send with the server down: got %v, want kind unavailable", err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var sent *hub.SendResult
	waitFor(t, "a send after the restart", func() bool {
		var err error
		sent, err = a.hub.Send(t.Context(), hub.SendRequest{Workspace: "w", From: "ann", To: "wally", Content: "back"})
		return err == nil
	})
	select {
	case r := <-got:
		if r.err != nil || r.m == nil || r.m.ID != sent.Message.ID {
			t.Fatalf("wait across the restart: got %+v, %v; want message %s", r.m, r.err, sent.Message.ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("wait across the restart: no message within 30 s of the send")
	}
}

// events gathers the events a hub publishes.
type events struct {
	mu  sync.Mutex
	got []hub.Event
}

func (ev *events) add(e hub.Event) { ev.mu.Lock(); ev.got = append(ev.got, e); ev.mu.Unlock() }

// find returns the first event that matches.
func (ev *events) find(match func(hub.Event) bool) (hub.Event, bool) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	for _, e := range ev.got {
		if match(e) {
			return e, true
		}
	}
	return hub.Event{}, false
}

// TestCrossDaemonEvents: what happens through daemon A reaches the
// subscribers of daemon B as it happened (marked remote): an agent joining
// and leaving, a message sent (its text too, read from the store when too
// large to travel), its copy handed out and read, a group made, and an event
// another part of the daemon publishes. B does not hear its own events back.
func TestCrossDaemonEvents(t *testing.T) {
	dsn := pgtest.Database(t)
	a, b := newDaemonHub(t, dsn), newDaemonHub(t, dsn)
	ctx := t.Context()
	var onB events
	defer b.hub.Subscribe(onB.add)()
	expect := func(what string, match func(hub.Event) bool) hub.Event {
		t.Helper()
		var e hub.Event
		waitFor(t, what+" on B", func() bool {
			var ok bool
			e, ok = onB.find(func(e hub.Event) bool { return e.Remote && match(e) })
			return ok
		})
		return e
	}

	if _, err := a.hub.Join(ctx, hub.JoinRequest{Workspace: "ws", Name: "alice", Role: "dev"}); err != nil {
		t.Fatal(err)
	}
	expect("alice joined", func(e hub.Event) bool {
		return e.Kind == hub.EventAgentJoined && e.Agent == "alice" && e.Role == "dev"
	})
	small, err := a.hub.Send(ctx, hub.SendRequest{Workspace: "ws", From: "alice", To: "bob", Content: "hello", Priority: "critical",
		Metadata: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	e := expect("the message sent", func(e hub.Event) bool {
		return e.Kind == hub.EventMessageSent && e.Message != nil && e.Message.ID == small.Message.ID
	})
	if m := e.Message; m.Content != "hello" || m.Priority != hub.Critical || m.Metadata["k"] != "v" || !slices.Equal(e.Recipients, []string{"bob"}) || e.Agent != "alice" {
		t.Errorf("message.sent on B: got %+v to %v, want alice's critical hello to bob", m, e.Recipients)
	}
	large := strings.Repeat("large ", 20<<10)
	big, err := a.hub.Send(ctx, hub.SendRequest{Workspace: "ws", From: "alice", To: "bob", Content: large})
	if err != nil {
		t.Fatal(err)
	}
	e = expect("the large message", func(e hub.Event) bool {
		return e.Kind == hub.EventMessageSent && e.Message != nil && e.Message.ID == big.Message.ID
	})
	if e.Message.Content != large {
		t.Errorf("large message on B: %d bytes of text, want %d", len(e.Message.Content), len(large))
	}
	// bob reads through A: the copy's events reach B.
	if _, _, err := a.hub.Check(ctx, "ws", "bob", 10); err != nil {
		t.Fatal(err)
	}
	expect("bob's copy read", func(e hub.Event) bool {
		return e.Kind == hub.EventMessageRead && e.Agent == "bob" && e.MessageID == small.Message.ID
	})
	if _, err := a.hub.CreateGroup(ctx, "ws", "team", "", "alice"); err != nil {
		t.Fatal(err)
	}
	expect("the group made", func(e hub.Event) bool {
		return e.Kind == hub.EventGroupChanged && e.Group == "team" && e.Change == "created"
	})
	a.hub.SessionOpened("ws", "alice")
	a.hub.SessionClosed("ws", "alice")
	expect("alice left", func(e hub.Event) bool { return e.Kind == hub.EventAgentLeft && e.Agent == "alice" })
	a.hub.Publish(hub.Event{Kind: "managed.status", Workspace: "ws", Agent: "m1", Detail: json.RawMessage(`{"status":"running"}`)})
	e = expect("a managed agent's status", func(e hub.Event) bool { return e.Kind == "managed.status" })
	if e.Agent != "m1" || string(e.Detail) != `{"status":"running"}` {
		t.Errorf("managed.status on B: got %+v", e)
	}

	// B's own events are its own: it hears none of them back.
	if _, err := b.hub.Send(ctx, hub.SendRequest{Workspace: "ws", From: "bob", To: "alice", Content: "from B"}); err != nil {
		t.Fatal(err)
	}
	var onA events
	defer a.hub.Subscribe(onA.add)()
	if _, err := b.hub.Send(ctx, hub.SendRequest{Workspace: "ws", From: "bob", To: "alice", Content: "marker"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the marker on A", func() bool {
		_, ok := onA.find(func(e hub.Event) bool { return e.Message != nil && e.Message.Content == "marker" })
		return ok
	})
	if _, ok := onB.find(func(e hub.Event) bool { return e.Remote && e.Message != nil && e.Message.From == "bob" }); ok {
		t.Errorf("B heard its own send back as remote")
	}
	if n := b.n.Dropped.Load() + a.n.Dropped.Load(); n != 0 {
		t.Errorf("events dropped: %d, want 0", n)
	}
}

// TestLostEventsResync: when events could not be carried, the other daemons
// are told to look at the store again (EventResync).
func TestLostEventsResync(t *testing.T) {
	dsn := pgtest.Database(t)
	a, b := newDaemonHub(t, dsn), newDaemonHub(t, dsn)
	var onB events
	defer b.hub.Subscribe(onB.add)()
	a.n.lost.Store(true) // as if the queue had overflowed
	a.hub.Publish(hub.Event{Kind: "managed.status", Workspace: "ws", Agent: "m1"})
	waitFor(t, "a resync on B", func() bool {
		_, ok := onB.find(func(e hub.Event) bool { return e.Kind == hub.EventResync })
		return ok
	})
}

// TestRelayCatchUp: the listening connections are cut and a burst of sends
// goes through A at once, while B's listener is down or coming back: B's
// subscribers hear every one of A's messages once, in order, the ones sent
// while nobody listened read from relay_events when B listens again.
func TestRelayCatchUp(t *testing.T) {
	dsn := pgtest.Database(t)
	a, b := newDaemonHub(t, dsn), newDaemonHub(t, dsn)
	ctx := t.Context()
	var mu sync.Mutex
	var got []string
	defer b.hub.Subscribe(func(e hub.Event) {
		if e.Kind == hub.EventMessageSent && e.Remote && e.Message != nil {
			mu.Lock()
			got = append(got, e.Message.ID)
			mu.Unlock()
		}
	})()
	var sent []string
	for round := range 3 {
		if _, err := a.db.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND query = 'LISTEN `+channel+`'`); err != nil {
			t.Fatal(err)
		}
		for i := range 100 {
			res, err := a.hub.Send(ctx, hub.SendRequest{Workspace: "ws", From: "alice", To: "bob", Content: fmt.Sprint("round ", round, " send ", i)})
			if err != nil {
				t.Fatal(err)
			}
			sent = append(sent, res.Message.ID)
		}
		waitFor(t, "B listening again", b.n.Listening)
	}
	waitFor(t, "B's subscribers to hear every send", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= len(sent) })
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, sent) {
		t.Errorf("B heard %d message.sent events, want the %d sent, each once, in order", len(got), len(sent))
	}
	t.Logf("B reconnected %d times and caught up on %d notifications", b.n.Reconnects.Load(), b.n.CaughtUp.Load())
	if b.n.Reconnects.Load() == 0 {
		t.Errorf("B's listener was never cut")
	}
}
