package postgres

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/store/postgres/pgtest"
)

// nodeHub is one daemon's hub on the database, named node, with the
// shortest heartbeat bound; it neither beats nor relays on its own.
func nodeHub(t *testing.T, dsn, node string) (*DB, *hub.Hub) {
	t.Helper()
	db, err := Open(t.Context(), dsn, &Options{Node: node, Host: "host-" + node})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, hub.New(db, &hub.Options{DeadAfter: hub.MinDeadAfter})
}

// TestReclaimDeadDaemon: daemon A holds a leased message, a claimed task, a
// reservation and a connected agent, then stops beating (as after kill -9).
// Once A is past its bound, daemon B gives all of it back, once: the message
// and the task return to their inboxes marked redelivered, the reservation
// ends, the agent goes offline; B's subscribers hear of each. When A beats
// again it learns it was taken for dead, and says again that its agent is
// here.
func TestReclaimDeadDaemon(t *testing.T) {
	dsn := pgtest.Database(t)
	dbA, a := nodeHub(t, dsn, "a")
	_, b := nodeHub(t, dsn, "b")
	_, c := nodeHub(t, dsn, "c")
	ctx := t.Context()
	for _, h := range []*hub.Hub{a, b, c} {
		if err := h.Beat(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Join(ctx, hub.JoinRequest{Workspace: "ws", Name: "worker", Role: "dev"}); err != nil {
		t.Fatal(err)
	}
	a.SessionOpened("ws", "worker")
	send := func(to, text string) string {
		t.Helper()
		res, err := b.Send(ctx, hub.SendRequest{Workspace: "ws", From: "boss", To: to, Content: text})
		if err != nil {
			t.Fatal(err)
		}
		return res.Message.ID
	}
	msg, task := send("worker", "read me"), send("queue:jobs", "do me")
	session := a.OpenReader(hub.ReaderOptions{Workspace: "ws", Agent: "worker"})
	if ds, _, err := a.Receive(ctx, hub.ReceiveRequest{Workspace: "ws", Agent: "worker", Reader: session}); err != nil || len(ds) != 1 {
		t.Fatalf("worker takes its message through A: %v, %v", ds, err)
	}
	if d, err := a.Claim(ctx, hub.ClaimRequest{Workspace: "ws", Agent: "worker", Queue: "jobs", Reader: session.Key(), Timeout: time.Second}); err != nil || d == nil {
		t.Fatalf("worker claims the task through A: %v, %v", d, err)
	}
	if res, err := a.Reserve(ctx, hub.ReserveRequest{Workspace: "ws", Agent: "worker", Paths: []string{"src/**"}, Exclusive: true}); err != nil || len(res.Conflicts) > 0 {
		t.Fatalf("worker reserves src/** through A: %+v, %v", res, err)
	}
	var onB events
	defer b.Subscribe(onB.add)()

	// B beats on; A is silent. Nothing is reclaimed before A's bound, which
	// starts at A's last beat (now: the setup above may outlast a bound on a
	// loaded machine).
	if err := a.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if rs, err := b.ReclaimDead(ctx); err != nil || len(rs) != 0 {
		t.Fatalf("reclaim while A is alive: %v, %v; want nothing", rs, err)
	}
	var got []*hub.Reclaimed
	deadline := time.Now().Add(20 * time.Second)
	for len(got) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("A was not reclaimed within 20 s of its last beat")
		}
		b.Beat(ctx)
		c.Beat(ctx)
		var err error
		if got, err = b.ReclaimDead(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := got[0]
	if len(got) != 1 || r.Node != "a" || len(r.Deliveries) != 2 || len(r.Reservations) != 1 || !slices.Equal(r.Agents, []hub.AgentKey{{Workspace: "ws", Name: "worker"}}) {
		t.Fatalf("reclaimed: %+v, want node a with 2 copies, 1 reservation, agent worker", got)
	}
	if rs, err := c.ReclaimDead(ctx); err != nil || len(rs) != 0 {
		t.Errorf("a second survivor reclaims again: %+v, %v; want nothing", rs, err)
	}

	worker := func(h *hub.Hub) bool {
		as, err := h.Agents(ctx, "ws")
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range as {
			if v.Name == "worker" {
				return v.Active
			}
		}
		t.Fatal("no agent worker")
		return false
	}
	if worker(b) {
		t.Errorf("worker active on B after A was reclaimed, want offline")
	}
	// The message is back in worker's inbox, redelivered; the task goes to
	// the next claimant; the paths are free.
	ds, _, err := b.Receive(ctx, hub.ReceiveRequest{Workspace: "ws", Agent: "worker"})
	if err != nil || len(ds) != 1 || ds[0].MessageID != msg || ds[0].Count != 2 {
		t.Errorf("worker's inbox after the reclaim: %+v, %v; want %s handed out a second time", ds, err, msg)
	}
	d, err := b.Claim(ctx, hub.ClaimRequest{Workspace: "ws", Agent: "other", Queue: "jobs", Reader: "session-2", Timeout: time.Second})
	if err != nil || d == nil || d.MessageID != task || d.Count != 2 {
		t.Errorf("another claimant after the reclaim: %+v, %v; want task %s, its second hand-out", d, err, task)
	}
	if res, err := b.Reserve(ctx, hub.ReserveRequest{Workspace: "ws", Agent: "other", Paths: []string{"src/main.go"}, Exclusive: true}); err != nil || len(res.Conflicts) > 0 {
		t.Errorf("other reserves src/main.go after the reclaim: %+v, %v; want it granted", res, err)
	}
	for _, want := range []struct {
		kind  hub.EventKind
		match func(hub.Event) bool
	}{
		{hub.EventMessageRedelivered, func(e hub.Event) bool { return e.MessageID == msg && e.Agent == "worker" }},
		{hub.EventTaskReleased, func(e hub.Event) bool { return e.MessageID == task }},
		{hub.EventReservations, func(e hub.Event) bool { return e.Change == "reclaimed" && len(e.Reservations) == 1 }},
		{hub.EventAgentLeft, func(e hub.Event) bool { return e.Agent == "worker" }},
	} {
		if _, ok := onB.find(func(e hub.Event) bool { return e.Kind == want.kind && want.match(e) }); !ok {
			t.Errorf("B's subscribers did not hear %s", want.kind)
		}
	}

	// A comes back (it was only paused): its beat says it was reclaimed,
	// it tells its clients, and worker, still connected to A, is active
	// again everywhere. Worker's completion of the task it held is refused,
	// saying why: another claimant has it, and it must not run twice.
	var onA events
	defer a.Subscribe(onA.add)()
	if err := a.Beat(ctx); err != nil {
		t.Fatalf("A's beat after the reclaim: %v", err)
	}
	if _, ok := onA.find(func(e hub.Event) bool { return e.Kind == hub.EventDaemonStore && e.Status == "reclaimed" }); !ok {
		t.Errorf("A's subscribers did not hear that A was reclaimed")
	}
	_, err = a.Complete(ctx, hub.CompleteRequest{Workspace: "ws", Agent: "worker", Readers: []string{session.Key()}, TaskID: task})
	if hub.KindOf(err) != hub.Conflict || !strings.Contains(err.Error(), "took it for dead") || !strings.Contains(err.Error(), "another claimant holds it") {
		t.Errorf("worker completes, through A, the task reclaimed from A: %v; want a conflict that says A was taken for dead and another claimant holds it", err)
	}
	if reclaimed, err := dbA.Beat(ctx, time.Second); err != nil || reclaimed {
		t.Fatalf("A's next beat: %v, %v; want not reclaimed", reclaimed, err)
	}
}

// TestBeatReclaimedRestoresPresence: a daemon that finds it was taken for
// dead says again that the agents connected to it are here.
func TestBeatReclaimedRestoresPresence(t *testing.T) {
	dsn := pgtest.Database(t)
	_, a := nodeHub(t, dsn, "a")
	_, b := nodeHub(t, dsn, "b")
	ctx := t.Context()
	a.Beat(ctx)
	if _, err := a.Join(ctx, hub.JoinRequest{Workspace: "ws", Name: "worker", Role: "dev"}); err != nil {
		t.Fatal(err)
	}
	a.SessionOpened("ws", "worker")
	waitFor(t, "A reclaimed by B", func() bool {
		b.Beat(ctx)
		rs, err := b.ReclaimDead(ctx)
		return err == nil && len(rs) == 1
	})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { a.Run(runCtx); close(done) }() // beats within a third of its bound
	defer func() { cancel(); <-done }()
	waitFor(t, "worker active on B again", func() bool {
		as, _ := b.Agents(ctx, "ws")
		return len(as) == 1 && as[0].Active
	})
}
