package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/runner"
	"github.com/parley-dev/parley/internal/store/postgres/pgtest"
	"github.com/parley-dev/parley/internal/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// openTest opens a store on a new, empty schema of the test server.
func openTest(t testing.TB) *DB {
	t.Helper()
	db, err := Open(context.Background(), pgtest.Schema(t), nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestContract runs the whole contract of a backend on PostgreSQL.
func TestContract(t *testing.T) {
	storetest.RunAll(t, func(t *testing.T) storetest.Backend { return openTest(t) })
}

// TestMigrateConcurrently opens one database from several daemons at once:
// the advisory lock lets one migrate and the others find the schema done.
func TestMigrateConcurrently(t *testing.T) {
	dsn := pgtest.Schema(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			db, err := Open(t.Context(), dsn, nil)
			if err == nil {
				db.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("Open: %v", err)
		}
	}
}

// TestNewerSchemaRefused: a database migrated by a newer parley is left alone.
func TestNewerSchemaRefused(t *testing.T) {
	dsn := pgtest.Schema(t)
	db, err := Open(t.Context(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(t.Context(), `UPDATE parley_schema SET version = 999`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(t.Context(), dsn, nil)
	if err == nil || !strings.Contains(err.Error(), "newer than this parley knows") {
		t.Fatalf("Open of a newer schema: got %v, want an error saying it is newer", err)
	}
}

// TestServerDown: while PostgreSQL is down every call fails fast as
// Unavailable; once it is back the same store works again.
func TestServerDown(t *testing.T) {
	c := pgtest.Private(t)
	ctx := t.Context()
	db, err := Open(ctx, c.DSN("postgres"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.PutAgent(ctx, &hub.Agent{Workspace: "ws", Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct {
		name string
		do   func() error
	}{
		{"Agents", func() error { _, err := db.Agents(ctx, "ws"); return err }},
		{"CreateMessage", func() error {
			return db.CreateMessage(ctx, &hub.Message{ID: "m1", Workspace: "ws", From: "alice", Content: "x", Priority: hub.Normal}, []string{"bob"})
		}},
		{"Take", func() error {
			_, _, err := db.Take(ctx, hub.TakeQuery{Workspace: "ws", Recipient: "bob", MaxRank: 3, Limit: 1})
			return err
		}},
	} {
		err := call.do()
		if hub.KindOf(err) != hub.Unavailable {
			t.Errorf("%s with the server down: got %v (kind %s), want kind unavailable", call.name, err, hub.KindOf(err))
		}
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	as, err := db.Agents(ctx, "ws")
	if err != nil || len(as) != 1 {
		t.Fatalf("Agents after the restart: got %v, %v; want alice", as, err)
	}
}

// openNode opens a store on dsn as the daemon node.
func openNode(t *testing.T, dsn, node string) *DB {
	t.Helper()
	db, err := Open(t.Context(), dsn, &Options{Node: node})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestRunnerNodes: daemons sharing a database each recover only the managed
// agents they launched, and see the others' as peers.
func TestRunnerNodes(t *testing.T) {
	dsn := pgtest.Schema(t)
	ctx := t.Context()
	open := func(node string) *DB { return openNode(t, dsn, node) }
	a, b := open("hostA:/home/u/.parley"), open("hostB:/home/u/.parley")
	for _, x := range []struct {
		db *DB
		id string
	}{{a, "agent-a"}, {b, "agent-b"}} {
		if err := x.db.PutManagedAgent(ctx, &runner.Agent{ID: x.id, Workspace: "ws"}); err != nil {
			t.Fatal(err)
		}
		if err := x.db.PutRun(ctx, &runner.Run{AgentID: x.id, Seq: 1, State: runner.RunRunning, PID: 4242}); err != nil {
			t.Fatal(err)
		}
	}
	for _, x := range []struct {
		db   *DB
		want string
	}{{a, "agent-a"}, {b, "agent-b"}} {
		as, err := x.db.ManagedAgents(ctx)
		if err != nil || len(as) != 1 || as[0].ID != x.want {
			t.Errorf("ManagedAgents of node %s: got %v, %v; want only %s", x.db.node, as, err, x.want)
		}
		runs, err := x.db.OpenRuns(ctx)
		if err != nil || len(runs) != 1 || runs[0].AgentID != x.want {
			t.Errorf("OpenRuns of node %s: got %v, %v; want only %s's", x.db.node, runs, err, x.want)
		}
	}
	// Each sees the other's agent as a peer, with its node and newest run.
	if err := b.PutRun(ctx, &runner.Run{AgentID: "agent-b", Seq: 2, State: runner.RunQueued}); err != nil {
		t.Fatal(err)
	}
	peers, err := a.PeerAgents(ctx, "ws", "")
	if err != nil || len(peers) != 1 || peers[0].ID != "agent-b" || peers[0].Node != b.node || peers[0].Latest == nil || peers[0].Latest.Seq != 2 {
		t.Errorf("PeerAgents of node A: got %+v, %v; want agent-b of node B with run 2", peers, err)
	}
	for _, q := range []struct{ ws, id string }{{"other", ""}, {"ws", "agent-a"}} {
		if peers, err := a.PeerAgents(ctx, q.ws, q.id); err != nil || len(peers) != 0 {
			t.Errorf("PeerAgents(%q, %q) of node A: got %+v, %v; want none", q.ws, q.id, peers, err)
		}
	}
}

// TestRecoverNodes: a daemon that starts again puts back its own leases of
// before, and leaves those of the daemons it shares the database with.
func TestRecoverNodes(t *testing.T) {
	dsn := pgtest.Schema(t)
	ctx := t.Context()
	open := func(node string) *DB { return openNode(t, dsn, node) }
	a, b := open("hostA:/home/u/.parley"), open("hostB:/home/u/.parley")
	ha, hb := hub.New(a, nil), hub.New(b, nil)
	if _, err := ha.Join(ctx, hub.JoinRequest{Workspace: "ws", Name: "bob", Role: "dev"}); err != nil {
		t.Fatal(err)
	}
	var sent []string
	for i := range 2 {
		r, err := ha.Send(ctx, hub.SendRequest{Workspace: "ws", From: "alice", To: "bob", Content: fmt.Sprint("m", i)})
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, r.Message.ID)
	}
	for _, x := range []struct {
		h      *hub.Hub
		reader string
	}{{ha, "session-on-a"}, {hb, "session-on-b"}} {
		if ds, _, err := x.h.Receive(ctx, hub.ReceiveRequest{Workspace: "ws", Agent: "bob", Reader: x.h.OpenReader(hub.ReaderOptions{Workspace: "ws", Agent: "bob", Kind: x.reader}), Limit: 1}); err != nil || len(ds) != 1 {
			t.Fatalf("Receive for %s: got %d, %v", x.reader, len(ds), err)
		}
	}
	// A starts again: its reader is gone, B's is not.
	a2 := open("hostA:/home/u/.parley")
	if n, err := hub.New(a2, nil).Recover(ctx); err != nil || n != 1 {
		t.Fatalf("Recover on A: got %d, %v; want 1", n, err)
	}
	for i, want := range []hub.DeliveryState{hub.Redelivered, hub.Delivered} {
		ds, err := a2.Deliveries(ctx, "ws", sent[i])
		if err != nil || len(ds) != 1 || ds[0].State != want {
			t.Errorf("message %d after A's recovery: got %v, %v; want %s", i, ds, err, want)
		}
	}
}

// TestAgentHost: an agent's host is that of the daemon that saw it last.
func TestAgentHost(t *testing.T) {
	dsn := pgtest.Schema(t)
	ctx := t.Context()
	open := func(host string) *DB {
		db, err := Open(ctx, dsn, &Options{Host: host})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	a, b := open("laptop"), open("buildbox")
	if err := a.PutAgent(ctx, &hub.Agent{Workspace: "ws", Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Agent(ctx, "ws", "alice"); err != nil || got.Host != "laptop" {
		t.Fatalf("host after a join on laptop: got %+v, %v; want laptop", got, err)
	}
	if err := b.TouchAgents(ctx, "ws", map[string]time.Time{"alice": time.Now()}); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Agent(ctx, "ws", "alice"); err != nil || got.Host != "buildbox" {
		t.Errorf("host after buildbox saw the agent: got %+v, %v; want buildbox", got, err)
	}
}

// TestAgentLeftAcrossDaemons: when an agent's last session on one daemon
// ends, another daemon on the database shows it gone at once, though its
// last-seen time is recent; when a session opens again, on either daemon,
// both show it active.
func TestAgentLeftAcrossDaemons(t *testing.T) {
	dsn := pgtest.Schema(t)
	ctx := t.Context()
	hubOf := func() *hub.Hub {
		db, err := Open(ctx, dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return hub.New(db, nil)
	}
	a, b := hubOf(), hubOf()
	if _, err := a.Join(ctx, hub.JoinRequest{Workspace: "ws", Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	active := func(h *hub.Hub) bool {
		ag, err := h.Agent(ctx, "ws", "alice")
		if err != nil {
			t.Fatal(err)
		}
		return h.Active(ag)
	}
	a.SessionOpened("ws", "alice")
	if !active(a) || !active(b) {
		t.Fatalf("session open on A: active on A %v, on B %v; want both", active(a), active(b))
	}
	a.SessionClosed("ws", "alice")
	if active(a) || active(b) {
		t.Errorf("last session on A ended: active on A %v, on B %v; want neither", active(a), active(b))
	}
	if ag, err := b.Agent(ctx, "ws", "alice"); err != nil || ag.LeftAt.IsZero() {
		t.Errorf("stored left time: %+v, %v; want one", ag, err)
	}
	b.SessionOpened("ws", "alice")
	if !active(a) || !active(b) {
		t.Errorf("back through B: active on A %v, on B %v; want both", active(a), active(b))
	}
	if ag, err := a.Agent(ctx, "ws", "alice"); err != nil || !ag.LeftAt.IsZero() {
		t.Errorf("stored left time after it came back: %+v, %v; want none", ag, err)
	}
	b.SessionClosed("ws", "alice")
	a.SessionOpened("ws", "alice")
	if !active(a) || !active(b) {
		t.Errorf("left B, back through A: active on A %v, on B %v; want both", active(a), active(b))
	}
}

// TestSearchStems: whole words match in any English form, stemmed, on
// content, payload and metadata alike; prefixes match words as written; stop
// words are words like any other.
func TestSearchStems(t *testing.T) {
	db := openTest(t)
	ctx := t.Context()
	for i, c := range []struct {
		content  string
		payload  string
		metadata map[string]string
	}{
		{content: "deployed the gateway"},
		{content: "nothing here", payload: `{"note": "the builds are failing"}`},
		{content: "still nothing", metadata: map[string]string{"state": "migrations running"}},
		{content: "redeploy it"},
		{content: "to be or not to be"},
	} {
		m := &hub.Message{ID: fmt.Sprint("m", i), Workspace: "ws", From: "alice", To: "bob", Content: c.content,
			Priority: hub.Normal, Metadata: c.metadata}
		if c.payload != "" {
			m.Payload = json.RawMessage(c.payload)
		}
		m.ThreadID = m.ID
		if err := db.CreateMessage(ctx, m, []string{"bob"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ query, want string }{
		{"deploying", "m0"},
		{"deployments gateways", "m0"},
		{`"deploying the gateways"`, "m0"}, // a phrase of stems
		{`"deploying gateway"`, ""},        // "the" is a word between them
		{"build failed", "m1"},
		{"migration runs", "m2"},
		{"redeployed", "m3"},
		{"deploy*", "m0"}, // not "redeploy"
		{"deployi*", ""},  // a prefix is matched as written, not stemmed
		{"not", "m4"},
		{"to be or", "m4"},
	} {
		terms, err := hub.ParseSearchQuery(c.query)
		if err != nil {
			t.Fatal(err)
		}
		hits, err := db.Search(ctx, "ws", hub.SearchQuery{Terms: terms, Limit: 10})
		if err != nil {
			t.Fatalf("search %q: %v", c.query, err)
		}
		var got []string
		for _, h := range hits {
			got = append(got, h.Message.ID)
		}
		if want := slices.DeleteFunc([]string{c.want}, func(s string) bool { return s == "" }); !slices.Equal(got, want) {
			t.Errorf("search %q: got %v, want %v", c.query, got, want)
		}
	}
}
