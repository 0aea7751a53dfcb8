// Package storetest is the one contract suite that every hub.Store passes: the
// behaviour documented on the hub.Store interface (and the runner's, the
// tokens' and the permission inbox's stores), and nothing a particular
// backend happens to do. The stores' own tests (internal/store/sqlite,
// internal/store/postgres) run it with RunAll; production code never imports
// it.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/permission"
	"github.com/parley-dev/parley/internal/permission/permtest"
	"github.com/parley-dev/parley/internal/runner"
	"github.com/parley-dev/parley/internal/token"
)

// Backend is everything a store backend keeps for the daemon: the hub's
// state, the managed agents', the agent tokens and the permission inbox.
type Backend interface {
	hub.Store
	runner.Store
	token.Store
	permission.Store
}

// RunAll runs the whole contract of a backend: what each of its interfaces
// documents, and nothing a particular backend happens to do. open must
// return a new, empty store for each call; RunAll closes it when the subtest
// ends.
//
// Times in the suite have microsecond precision, the finest that every backend
// keeps (PostgreSQL's timestamptz); stores may return them in any location.
func RunAll(t *testing.T, open func(t *testing.T) Backend) {
	hubStore := func(t *testing.T) hub.Store { return open(t) }
	t.Run("Hub", func(t *testing.T) { runHub(t, hubStore) })
	t.Run("Reservations", func(t *testing.T) { runReservations(t, hubStore) })
	t.Run("Search", func(t *testing.T) { runSearch(t, hubStore) })
	t.Run("Purge", func(t *testing.T) { runPurge(t, hubStore) })
	t.Run("PurgeKeepsKeys", func(t *testing.T) { runPurgeKeepsKeys(t, hubStore) })
	t.Run("Queues", func(t *testing.T) { runQueues(t, hubStore) })
	t.Run("Runner", func(t *testing.T) { runRunner(t, func(t *testing.T) runner.Store { return open(t) }) })
	t.Run("Tokens", func(t *testing.T) { runTokens(t, func(t *testing.T) token.Store { return open(t) }) })
	t.Run("Permissions", func(t *testing.T) { permtest.Run(t, func(t *testing.T) permission.Store { return open(t) }) })
}

// runHub runs the contract of hub.Store's messages, deliveries and groups.
func runHub(t *testing.T, open func(t *testing.T) hub.Store) {
	suite(t, open, store, []test[hub.Store]{
		{"Agents", testAgents},
		{"AgentStatus", testAgentStatus},
		{"TouchAgents", testTouchAgents},
		{"MessageRoundTrip", testMessageRoundTrip},
		{"MessageNotFound", testMessageNotFound},
		{"MessageDuplicateID", testMessageDuplicateID},
		{"ConsumeOrder", testConsumeOrder},
		{"ConsumeManyAcrossRanks", testConsumeManyAcrossRanks},
		{"ConsumeMaxRank", testConsumeMaxRank},
		{"ConsumeLimit", testConsumeLimit},
		{"ConsumePerRecipient", testConsumePerRecipient},
		{"ConsumeConcurrent", testConsumeConcurrent},
		{"Unread", testUnread},
		{"Peek", testPeek},
		{"History", testHistory},
		{"ClearInbox", testClearInbox},
		{"Groups", testGroups},
		{"GroupMembers", testGroupMembers},
		{"GroupNotFound", testGroupNotFound},
		{"WorkspaceIsolation", testWorkspaceIsolation},
		{"Workspaces", testWorkspaces},
		{"ContextCanceled", testContextCanceled},
		{"AckFieldsRoundTrip", testAckFieldsRoundTrip},
		{"WakePath", testWakePath},
		{"TakeLeases", testTakeLeases},
		{"Handoff", testHandoff},
		{"Confirm", testConfirm},
		{"TakeConfirms", testTakeConfirms},
		{"ReleaseKeepsPlace", testReleaseKeepsPlace},
		{"Reopen", testReopen},
		{"ReleaseMine", testReleaseMine},
		{"ReleaseSelects", testReleaseSelects},
		{"TakeConcurrentReaders", testTakeConcurrentReaders},
		{"TakeThread", testTakeThread},
		{"TakeRepliers", testTakeRepliers},
		{"Ack", testAck},
		{"Deliveries", testDeliveries},
		{"DueAcksAndOverdue", testDueAcksAndOverdue},
		{"Unacked", testUnacked},
		{"ClearInboxLeased", testClearInboxLeased},
		{"CompleteTask", testCompleteTask},
		{"IdempotencyKey", testIdempotencyKey},
		{"Doors", testDoors},
		{"MarkLetter", testMarkLetter},
		{"ExpiryAndBounce", testExpiryAndBounce},
		{"ExpiryOrder", testExpiryOrder},
		{"RenameAgent", testRenameAgent},
		{"AgentLifetime", testAgentLifetime},
		{"ForgetAgent", testForgetAgent},
	})
}

// test is one case of a suite, on a T made from a store of its own.
type test[T any] struct {
	name string
	fn   func(t *testing.T, x T)
}

// suite runs each test in parallel on a new store: open makes it, with turns
// it into what the tests take (store, as), and it is closed when the test
// ends.
func suite[T any](t *testing.T, open func(t *testing.T) hub.Store, with func(*testing.T, hub.Store) T, tests []test[T]) {
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, with(t, s))
		})
	}
}

// store is suite's with for tests of the store itself.
func store(_ *testing.T, s hub.Store) hub.Store { return s }

// t0 is the suite's epoch; microsecond precision on purpose (see RunAll).
var t0 = time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)

func at(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// fixture builds messages with increasing ids and creation times.
type fixture struct {
	t  *testing.T
	s  hub.Store
	mu sync.Mutex
	n  int
}

func newFixture(t *testing.T, s hub.Store) *fixture { return &fixture{t: t, s: s} }

// msg returns a new message (not stored) in ws from sender, with priority p.
func (f *fixture) msg(ws, from string, p hub.Priority, content string) *hub.Message {
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	id := fmt.Sprintf("01HZZZZZZZZZZZZZZZ%08d", n)
	return &hub.Message{
		ID: id, Workspace: ws, From: from, To: "", Content: content,
		Priority: p, ThreadID: id, CreatedAt: at(n),
	}
}

// send stores a new message to recipients and returns it.
func (f *fixture) send(ws, from string, p hub.Priority, content string, to ...string) *hub.Message {
	f.t.Helper()
	m := f.msg(ws, from, p, content)
	m.To = strings.Join(to, ",")
	if err := f.s.CreateMessage(context.Background(), m, to); err != nil {
		f.t.Fatalf("CreateMessage(%s): %v", m.ID, err)
	}
	return m
}

func ctx(t *testing.T) context.Context { return t.Context() }

// consume takes deliveries without a reader, so that they are read at once,
// and returns their messages: what reading was before deliveries were leased.
func consume(c context.Context, s hub.Store, ws, recipient string, maxRank, limit int) ([]*hub.Message, error) {
	ds, _, err := s.Take(c, hub.TakeQuery{Workspace: ws, Recipient: recipient, MaxRank: maxRank, Limit: limit, Now: time.Now()})
	return messagesOf(ds), err
}

// peek is Peek's messages.
func peek(c context.Context, s hub.Store, ws, recipient string, limit int) ([]*hub.Message, error) {
	ds, err := s.Peek(c, ws, recipient, limit)
	return messagesOf(ds), err
}

func messagesOf(ds []*hub.Delivery) []*hub.Message {
	var ms []*hub.Message
	for _, d := range ds {
		ms = append(ms, d.Message)
	}
	return ms
}

func ids(ms []*hub.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func contents(ms []*hub.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Content
	}
	return out
}

func wantKind(t *testing.T, what string, err error, want hub.Kind) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: got no error, want a %s error", what, want)
		return
	}
	if got := hub.KindOf(err); got != want {
		t.Errorf("%s: got error %q of kind %s, want kind %s", what, err, got, want)
	}
}

func checkMessage(t *testing.T, what string, got, want *hub.Message) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: got nil message, want %s", what, want.ID)
	}
	type pair struct {
		field     string
		got, want any
	}
	for _, p := range []pair{
		{"ID", got.ID, want.ID},
		{"Workspace", got.Workspace, want.Workspace},
		{"From", got.From, want.From},
		{"To", got.To, want.To},
		{"Content", got.Content, want.Content},
		{"Priority", got.Priority, want.Priority},
		{"ReplyTo", got.ReplyTo, want.ReplyTo},
		{"ThreadID", got.ThreadID, want.ThreadID},
		{"Origin", got.Origin, want.Origin},
	} {
		if p.got != p.want {
			t.Errorf("%s: %s: got %q, want %q", what, p.field, p.got, p.want)
		}
	}
	if !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("%s: CreatedAt: got %v, want %v", what, got.CreatedAt, want.CreatedAt)
	}
	if (got.Payload == nil) != (want.Payload == nil) || !bytes.Equal(got.Payload, want.Payload) {
		t.Errorf("%s: Payload: got %q (nil %v), want %q (nil %v)", what,
			got.Payload, got.Payload == nil, want.Payload, want.Payload == nil)
	}
	// nil and empty metadata are the same thing.
	if len(got.Metadata) != len(want.Metadata) {
		t.Errorf("%s: Metadata: got %v, want %v", what, got.Metadata, want.Metadata)
	}
	for k, v := range want.Metadata {
		if gv, ok := got.Metadata[k]; !ok || gv != v {
			t.Errorf("%s: Metadata[%q]: got %q, want %q", what, k, gv, v)
		}
	}
}

func checkAgent(t *testing.T, what string, got, want *hub.Agent) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: got nil agent, want %s", what, want.Name)
	}
	if got.Workspace != want.Workspace || got.Name != want.Name || got.Role != want.Role ||
		got.Module != want.Module || got.Status != want.Status {
		t.Errorf("%s: got %s/%s role=%q module=%q status=%q, want %s/%s role=%q module=%q status=%q", what,
			got.Workspace, got.Name, got.Role, got.Module, got.Status,
			want.Workspace, want.Name, want.Role, want.Module, want.Status)
	}
	if !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("%s: CreatedAt: got %v, want %v", what, got.CreatedAt, want.CreatedAt)
	}
	if !got.LastSeen.Equal(want.LastSeen) {
		t.Errorf("%s: LastSeen: got %v, want %v", what, got.LastSeen, want.LastSeen)
	}
}

func testAgents(t *testing.T, s hub.Store) {
	c := ctx(t)
	agents := []*hub.Agent{
		{Workspace: "ws", Name: "carol", Role: "reviewer", Module: "api", Status: hub.StatusReady, CreatedAt: at(1), LastSeen: at(2)},
		{Workspace: "ws", Name: "alice", Role: "dev", Status: hub.StatusWork, CreatedAt: at(3), LastSeen: at(4)},
		{Workspace: "ws", Name: "bob", Role: "dev", Module: "web", Status: hub.StatusOffline, CreatedAt: at(5)},
	}
	for _, a := range agents {
		in := *a
		if err := s.PutAgent(c, &in); err != nil {
			t.Fatalf("PutAgent(%s): %v", a.Name, err)
		}
	}
	for _, want := range agents {
		got, err := s.Agent(c, "ws", want.Name)
		if err != nil {
			t.Fatalf("Agent(%s): %v", want.Name, err)
		}
		checkAgent(t, "Agent("+want.Name+")", got, want)
	}

	// An update changes everything but the creation time.
	upd := &hub.Agent{Workspace: "ws", Name: "alice", Role: "lead", Module: "core",
		Status: hub.StatusReady, CreatedAt: at(100), LastSeen: at(101)}
	if err := s.PutAgent(c, upd); err != nil {
		t.Fatalf("PutAgent(alice again): %v", err)
	}
	got, err := s.Agent(c, "ws", "alice")
	if err != nil {
		t.Fatalf("Agent(alice): %v", err)
	}
	want := &hub.Agent{Workspace: "ws", Name: "alice", Role: "lead", Module: "core",
		Status: hub.StatusReady, CreatedAt: at(3), LastSeen: at(101)}
	checkAgent(t, "Agent(alice) after update", got, want)

	list, err := s.Agents(c, "ws")
	if err != nil {
		t.Fatalf("Agents: %v", err)
	}
	var names []string
	for _, a := range list {
		names = append(names, a.Name)
	}
	if w := []string{"alice", "bob", "carol"}; !slices.Equal(names, w) {
		t.Errorf("Agents: got %v, want %v", names, w)
	}
	if len(list) == 3 {
		checkAgent(t, "Agents()[0]", list[0], want)
	}

	list, err = s.Agents(c, "empty")
	if err != nil || len(list) != 0 {
		t.Errorf("Agents(empty workspace): got %d agents, %v; want 0, nil", len(list), err)
	}

	for _, tc := range []struct{ name, ws, agent string }{
		{"unknown name", "ws", "dave"},
		{"other workspace", "other", "alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Agent(c, tc.ws, tc.agent)
			wantKind(t, "Agent("+tc.ws+", "+tc.agent+")", err, hub.NotFound)
		})
	}
}

func testAgentStatus(t *testing.T, s hub.Store) {
	c := ctx(t)
	a := &hub.Agent{Workspace: "ws", Name: "alice", Role: "dev", Status: hub.StatusReady, CreatedAt: at(1), LastSeen: at(1)}
	if err := s.PutAgent(c, a); err != nil {
		t.Fatalf("PutAgent: %v", err)
	}
	for _, st := range []hub.Status{hub.StatusWork, hub.StatusOffline, hub.StatusReady} {
		if err := s.SetAgentStatus(c, "ws", "alice", st); err != nil {
			t.Fatalf("SetAgentStatus(%s): %v", st, err)
		}
		got, err := s.Agent(c, "ws", "alice")
		if err != nil {
			t.Fatalf("Agent: %v", err)
		}
		if got.Status != st {
			t.Errorf("status: got %q, want %q", got.Status, st)
		}
		if got.Role != "dev" || !got.CreatedAt.Equal(at(1)) {
			t.Errorf("SetAgentStatus changed other fields: got role %q created %v", got.Role, got.CreatedAt)
		}
	}
	wantKind(t, "SetAgentStatus(unknown)", s.SetAgentStatus(c, "ws", "bob", hub.StatusWork), hub.NotFound)
	wantKind(t, "SetAgentStatus(other workspace)", s.SetAgentStatus(c, "other", "alice", hub.StatusWork), hub.NotFound)
}

func testTouchAgents(t *testing.T, s hub.Store) {
	c := ctx(t)
	for _, n := range []string{"alice", "bob", "carol"} {
		if err := s.PutAgent(c, &hub.Agent{Workspace: "ws", Name: n, Role: "dev", Status: hub.StatusReady, CreatedAt: at(1), LastSeen: at(1)}); err != nil {
			t.Fatalf("PutAgent(%s): %v", n, err)
		}
	}
	err := s.TouchAgents(c, "ws", map[string]time.Time{"alice": at(50), "bob": at(60), "ghost": at(70)})
	if err != nil {
		t.Fatalf("TouchAgents: %v", err)
	}
	for _, tc := range []struct {
		name string
		want time.Time
	}{
		{"alice", at(50)}, {"bob", at(60)}, {"carol", at(1)},
	} {
		got, err := s.Agent(c, "ws", tc.name)
		if err != nil {
			t.Fatalf("Agent(%s): %v", tc.name, err)
		}
		if !got.LastSeen.Equal(tc.want) {
			t.Errorf("%s LastSeen: got %v, want %v", tc.name, got.LastSeen, tc.want)
		}
	}
	if _, err := s.Agent(c, "ws", "ghost"); !hub.IsNotFound(err) {
		t.Errorf("TouchAgents created unknown agent ghost: got err %v, want NotFound", err)
	}
	if err := s.TouchAgents(c, "ws", nil); err != nil {
		t.Errorf("TouchAgents(nil): got %v, want nil", err)
	}
}

func testMessageRoundTrip(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	root := f.msg("ws", "alice", hub.Normal, "root")
	tests := []struct {
		name   string
		modify func(m *hub.Message)
	}{
		{"plain", func(m *hub.Message) {}},
		{"markdown and unicode", func(m *hub.Message) { m.Content = "# Título\n\n- ✓ `code`\n\ttail" }},
		// Payload bytes are kept exactly: whitespace and key order included, so
		// a JSON-typed column must not normalise them (PostgreSQL: json, not jsonb).
		{"payload object", func(m *hub.Message) { m.Payload = json.RawMessage(`{"b": 1,  "a":[1,2,{"x":null}]}`) }},
		{"payload string", func(m *hub.Message) { m.Payload = json.RawMessage(`"just a string"`) }},
		{"payload number", func(m *hub.Message) { m.Payload = json.RawMessage(`42`) }},
		{"nil payload", func(m *hub.Message) { m.Payload = nil }},
		{"metadata", func(m *hub.Message) { m.Metadata = map[string]string{"k": "v", "empty": "", "ü": "ñ"} }},
		{"empty metadata", func(m *hub.Message) { m.Metadata = map[string]string{} }},
		{"reply", func(m *hub.Message) { m.ReplyTo = root.ID; m.ThreadID = root.ID }},
		{"critical", func(m *hub.Message) { m.Priority = hub.Critical }},
		{"low", func(m *hub.Message) { m.Priority = hub.Low }},
		{"long content", func(m *hub.Message) { m.Content = strings.Repeat("x", 256<<10) }},
		{"origin", func(m *hub.Message) {
			m.Origin = hub.Origin{Role: "dev", Host: "box-1", Door: hub.DoorMCP}
		}},
		{"a task's result", func(m *hub.Message) {
			m.ReplyTo, m.ThreadID = root.ID, root.ID
			m.Origin = hub.Origin{Role: "builder", Host: "box-2", Door: hub.DoorCLI, Task: root.ID}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := f.msg("ws", "alice", hub.High, "hello "+tt.name)
			m.To = "@dev"
			tt.modify(m)
			want := *m
			if err := s.CreateMessage(c, m, []string{"bob"}); err != nil {
				t.Fatalf("CreateMessage: %v", err)
			}
			got, err := s.Message(c, "ws", m.ID)
			if err != nil {
				t.Fatalf("Message: %v", err)
			}
			checkMessage(t, "Message", got, &want)

			peeked, err := peek(c, s, "ws", "bob", 100)
			if err != nil {
				t.Fatalf("Peek: %v", err)
			}
			if len(peeked) != 1 {
				t.Fatalf("Peek: got %d messages, want 1", len(peeked))
			}
			checkMessage(t, "Peek", peeked[0], &want)
			consumed, err := consume(c, s, "ws", "bob", 3, 100)
			if err != nil {
				t.Fatalf("Consume: %v", err)
			}
			if len(consumed) != 1 {
				t.Fatalf("Consume: got %d messages, want 1", len(consumed))
			}
			checkMessage(t, "Consume", consumed[0], &want)
			hist, err := s.History(c, "ws", hub.HistoryQuery{Limit: 1})
			if err != nil {
				t.Fatalf("History: %v", err)
			}
			if len(hist) != 1 {
				t.Fatalf("History: got %d messages, want 1", len(hist))
			}
			checkMessage(t, "History", hist[0], &want)
		})
	}
}

func testMessageNotFound(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	m := f.send("ws", "alice", hub.Normal, "hi", "bob")
	for _, tc := range []struct{ name, ws, id string }{
		{"unknown id", "ws", "01HNOSUCHMESSAGE0000000000"},
		{"other workspace", "other", m.ID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Message(c, tc.ws, tc.id)
			wantKind(t, "Message("+tc.ws+", "+tc.id+")", err, hub.NotFound)
		})
	}
}

func testMessageDuplicateID(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	m := f.send("ws", "alice", hub.Normal, "first", "bob")
	dup := *m
	dup.Content = "second"
	if err := s.CreateMessage(c, &dup, []string{"carol"}); err == nil {
		t.Fatalf("CreateMessage with a duplicate id: got no error, want one")
	}
	// Atomic: the failed message left no delivery behind.
	if n, err := s.Unread(c, "ws", "carol", 3); err != nil || n != 0 {
		t.Errorf("Unread(carol) after failed create: got %d, %v; want 0, nil", n, err)
	}
	got, err := s.Message(c, "ws", m.ID)
	if err != nil || got.Content != "first" {
		t.Errorf("Message after duplicate: got %v, %v; want content %q", got, err, "first")
	}
}

func testConsumeOrder(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	// Sent in this order; the inbox must be ranked, then oldest first.
	for _, p := range []struct {
		p       hub.Priority
		content string
	}{
		{hub.Low, "low-1"}, {hub.Normal, "normal-1"}, {hub.Critical, "critical-1"},
		{hub.High, "high-1"}, {hub.Normal, "normal-2"}, {hub.Critical, "critical-2"},
		{hub.Low, "low-2"}, {hub.High, "high-2"},
	} {
		f.send("ws", "alice", p.p, p.content, "bob")
	}
	want := []string{"critical-1", "critical-2", "high-1", "high-2", "normal-1", "normal-2", "low-1", "low-2"}

	peeked, err := peek(c, s, "ws", "bob", 100)
	if err != nil {
		t.Fatalf("Peek: %v", err)
	}
	if got := contents(peeked); !slices.Equal(got, want) {
		t.Errorf("Peek order: got %v, want %v", got, want)
	}
	got, err := consume(c, s, "ws", "bob", 3, 100)
	if err != nil {
		t.Fatalf("Consume: %v", err)
	}
	if g := contents(got); !slices.Equal(g, want) {
		t.Errorf("Consume order: got %v, want %v", g, want)
	}
	for _, m := range got {
		if m.Workspace != "ws" {
			t.Errorf("Consume: message %s has workspace %q, want %q", m.ID, m.Workspace, "ws")
		}
	}
	got, err = consume(c, s, "ws", "bob", 3, 100)
	if err != nil || len(got) != 0 {
		t.Errorf("Consume of an empty inbox: got %v, %v; want no messages, nil", contents(got), err)
	}
	if n, err := s.Unread(c, "ws", "bob", 3); err != nil || n != 0 {
		t.Errorf("Unread after consuming all: got %d, %v; want 0, nil", n, err)
	}
}

func testConsumeManyAcrossRanks(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	prios := []hub.Priority{hub.Normal, hub.Low, hub.High, hub.Normal, hub.Critical, hub.Normal, hub.High}
	var sent []*hub.Message
	for i := range 150 {
		sent = append(sent, f.send("ws", "alice", prios[i%len(prios)], fmt.Sprintf("m%03d", i), "bob"))
	}
	want := slices.Clone(sent)
	sort.SliceStable(want, func(i, j int) bool { return want[i].Priority.Rank() < want[j].Priority.Rank() })

	var got []*hub.Message
	for {
		batch, err := consume(c, s, "ws", "bob", 3, 7)
		if err != nil {
			t.Fatalf("Consume: %v", err)
		}
		if len(batch) > 7 {
			t.Fatalf("Consume(limit 7): got %d messages", len(batch))
		}
		if len(batch) == 0 {
			break
		}
		got = append(got, batch...)
	}
	if g, w := ids(got), ids(want); !slices.Equal(g, w) {
		t.Errorf("Consume in batches of 7: got order %v, want %v", contents(got), contents(want))
	}
}

func testConsumeMaxRank(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	for _, p := range []hub.Priority{hub.Low, hub.Normal, hub.High, hub.Critical, hub.Normal, hub.High} {
		f.send("ws", "alice", p, string(p), "bob")
	}
	tests := []struct {
		name    string
		maxRank int
		want    []string
		unread  int // all ranks, after the call
	}{
		{"critical only", 0, []string{"critical"}, 5},
		{"critical again: none left", 0, nil, 5},
		{"high and above", 1, []string{"high", "high"}, 3},
		{"normal and above", 2, []string{"normal", "normal"}, 1},
		{"all", 3, []string{"low"}, 0},
	}
	for _, tt := range tests {
		got, err := consume(c, s, "ws", "bob", tt.maxRank, 100)
		if err != nil {
			t.Fatalf("%s: Consume: %v", tt.name, err)
		}
		if g := contents(got); !slices.Equal(g, tt.want) && !(len(g) == 0 && len(tt.want) == 0) {
			t.Errorf("%s: Consume(maxRank %d): got %v, want %v", tt.name, tt.maxRank, g, tt.want)
		}
		if n, err := s.Unread(c, "ws", "bob", 3); err != nil || n != tt.unread {
			t.Errorf("%s: Unread after: got %d, %v; want %d, nil", tt.name, n, err, tt.unread)
		}
	}
}

func testConsumeLimit(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	for i := range 5 {
		f.send("ws", "alice", hub.Normal, fmt.Sprint(i), "bob")
	}
	for _, tt := range []struct {
		limit int
		want  []string
	}{
		{2, []string{"0", "1"}},
		{1, []string{"2"}},
		{5, []string{"3", "4"}},
		{5, nil},
	} {
		got, err := consume(c, s, "ws", "bob", 3, tt.limit)
		if err != nil {
			t.Fatalf("Consume(limit %d): %v", tt.limit, err)
		}
		if g := contents(got); !slices.Equal(g, tt.want) && !(len(g) == 0 && len(tt.want) == 0) {
			t.Errorf("Consume(limit %d): got %v, want %v", tt.limit, g, tt.want)
		}
	}
}

func testConsumePerRecipient(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	m := f.send("ws", "alice", hub.High, "to three", "bob", "carol", "dave")
	for _, r := range []string{"bob", "carol", "dave"} {
		if n, err := s.Unread(c, "ws", r, 3); err != nil || n != 1 {
			t.Errorf("Unread(%s): got %d, %v; want 1, nil", r, n, err)
		}
	}
	if n, err := s.Unread(c, "ws", "alice", 3); err != nil || n != 0 {
		t.Errorf("Unread(alice, the sender): got %d, %v; want 0, nil", n, err)
	}
	remaining := []string{"bob", "carol", "dave"}
	for len(remaining) > 0 {
		r := remaining[0]
		remaining = remaining[1:]
		got, err := consume(c, s, "ws", r, 3, 10)
		if err != nil {
			t.Fatalf("Consume(%s): %v", r, err)
		}
		if g := ids(got); !slices.Equal(g, []string{m.ID}) {
			t.Errorf("Consume(%s): got %v, want [%s]", r, g, m.ID)
		}
		if again, err := consume(c, s, "ws", r, 3, 10); err != nil || len(again) != 0 {
			t.Errorf("Consume(%s) again: got %v, %v; want nothing", r, ids(again), err)
		}
		for _, o := range remaining {
			if n, err := s.Unread(c, "ws", o, 3); err != nil || n != 1 {
				t.Errorf("Unread(%s) after %s consumed: got %d, %v; want 1, nil", o, r, n, err)
			}
		}
	}
}

func testConsumeConcurrent(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	const workers, messages = 8, 200
	prios := []hub.Priority{hub.Critical, hub.High, hub.Normal, hub.Low}
	sent := map[string]bool{}
	for i := range messages {
		sent[f.send("ws", "alice", prios[i%4], fmt.Sprint(i), "bob").ID] = true
	}
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		wg   sync.WaitGroup
		errs = make(chan error, workers)
	)
	for w := range workers {
		wg.Go(func() {
			for {
				got, err := consume(c, s, "ws", "bob", 3, 1+w%3)
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, m := range got {
					seen[m.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent Consume: %v", err)
	}
	for id := range sent {
		if seen[id] != 1 {
			t.Errorf("message %s: returned %d times, want exactly once", id, seen[id])
		}
	}
	if len(seen) != len(sent) {
		t.Errorf("got %d distinct messages, want %d", len(seen), len(sent))
	}
}

func testUnread(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	for _, p := range []hub.Priority{hub.Critical, hub.High, hub.High, hub.Normal, hub.Normal, hub.Normal, hub.Low} {
		f.send("ws", "alice", p, string(p), "bob")
	}
	for _, tt := range []struct{ maxRank, want int }{{0, 1}, {1, 3}, {2, 6}, {3, 7}} {
		if n, err := s.Unread(c, "ws", "bob", tt.maxRank); err != nil || n != tt.want {
			t.Errorf("Unread(maxRank %d): got %d, %v; want %d, nil", tt.maxRank, n, err, tt.want)
		}
	}
	if n, err := s.Unread(c, "ws", "nobody", 3); err != nil || n != 0 {
		t.Errorf("Unread(nobody): got %d, %v; want 0, nil", n, err)
	}
	// Grouped: every recipient at once, the same counts, in ws only, and
	// without the copies out on lease.
	f.send("ws", "bob", hub.Normal, "to carol", "carol", "dave")
	f.send("ws", "bob", hub.Normal, "leased", "dave")
	f.send("other", "alice", hub.Normal, "elsewhere", "bob")
	take(t, s, "ws", "dave", "s1", 1, at(100)) // dave's first copy, leased
	for _, tt := range []struct {
		maxRank int
		want    map[string]int
	}{{0, map[string]int{"bob": 1}}, {3, map[string]int{"bob": 7, "carol": 1, "dave": 1}}} {
		got, err := s.UnreadByRecipient(c, "ws", tt.maxRank)
		if err != nil || !maps.Equal(got, tt.want) {
			t.Errorf("UnreadByRecipient(maxRank %d): got %v, %v; want %v, nil", tt.maxRank, got, err, tt.want)
		}
	}
	if got, err := s.UnreadByRecipient(c, "nowhere", 3); err != nil || len(got) != 0 {
		t.Errorf("UnreadByRecipient(empty workspace): got %v, %v; want none", got, err)
	}
}

func testPeek(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	for _, p := range []hub.Priority{hub.Low, hub.Normal, hub.Critical} {
		f.send("ws", "alice", p, string(p), "bob")
	}
	for range 2 {
		got, err := peek(c, s, "ws", "bob", 2)
		if err != nil {
			t.Fatalf("Peek: %v", err)
		}
		if g, w := contents(got), []string{"critical", "normal"}; !slices.Equal(g, w) {
			t.Errorf("Peek(limit 2): got %v, want %v", g, w)
		}
		if n, err := s.Unread(c, "ws", "bob", 3); err != nil || n != 3 {
			t.Errorf("Unread after Peek: got %d, %v; want 3, nil", n, err)
		}
	}
	got, err := consume(c, s, "ws", "bob", 3, 1)
	if err != nil || len(got) != 1 || got[0].Content != "critical" {
		t.Fatalf("Consume after Peek: got %v, %v; want [critical]", contents(got), err)
	}
	got, err = peek(c, s, "ws", "bob", 10)
	if g, w := contents(got), []string{"normal", "low"}; err != nil || !slices.Equal(g, w) {
		t.Errorf("Peek after Consume: got %v, %v; want %v", g, err, w)
	}
}

func testHistory(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	a := f.send("ws", "alice", hub.Normal, "a: alice->bob", "bob")
	b := f.send("ws", "bob", hub.Low, "b: bob->carol", "carol")
	r := f.msg("ws", "carol", hub.High, "r: carol->alice, reply to a")
	r.ReplyTo, r.ThreadID = a.ID, a.ID
	if err := s.CreateMessage(c, r, []string{"alice"}); err != nil {
		t.Fatalf("CreateMessage: %v", err)
	}
	d := f.send("ws", "dave", hub.Critical, "d: dave->bob,carol", "bob", "carol")
	// Reading does not remove anything from history.
	if _, err := consume(c, s, "ws", "bob", 3, 10); err != nil {
		t.Fatalf("Consume: %v", err)
	}
	tests := []struct {
		name string
		q    hub.HistoryQuery
		want []*hub.Message
	}{
		{"all newest first", hub.HistoryQuery{}, []*hub.Message{d, r, b, a}},
		{"limit", hub.HistoryQuery{Limit: 2}, []*hub.Message{d, r}},
		{"thread", hub.HistoryQuery{Thread: a.ID}, []*hub.Message{r, a}},
		{"thread with limit", hub.HistoryQuery{Thread: a.ID, Limit: 1}, []*hub.Message{r}},
		{"agent bob: sent or received", hub.HistoryQuery{Agent: "bob"}, []*hub.Message{d, b, a}},
		{"agent carol", hub.HistoryQuery{Agent: "carol"}, []*hub.Message{d, r, b}},
		{"agent dave: sender only", hub.HistoryQuery{Agent: "dave"}, []*hub.Message{d}},
		{"agent and thread", hub.HistoryQuery{Agent: "carol", Thread: a.ID}, []*hub.Message{r}},
		{"unknown agent", hub.HistoryQuery{Agent: "zed"}, nil},
		{"unknown thread", hub.HistoryQuery{Thread: "nope"}, nil},
		// A viewer reads its threads whole: r is in a's thread, which bob
		// received, though r went from carol to alice.
		{"viewer bob: his threads", hub.HistoryQuery{Viewer: "bob"}, []*hub.Message{d, r, b, a}},
		{"viewer alice", hub.HistoryQuery{Viewer: "alice"}, []*hub.Message{r, a}},
		{"viewer dave", hub.HistoryQuery{Viewer: "dave"}, []*hub.Message{d}},
		{"viewer and thread", hub.HistoryQuery{Viewer: "bob", Thread: a.ID}, []*hub.Message{r, a}},
		{"viewer and a thread not his", hub.HistoryQuery{Viewer: "dave", Thread: a.ID}, nil},
		{"viewer and agent", hub.HistoryQuery{Viewer: "bob", Agent: "carol"}, []*hub.Message{d, r, b}},
		{"unknown viewer", hub.HistoryQuery{Viewer: "zed"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.History(c, "ws", tt.q)
			if err != nil {
				t.Fatalf("History(%+v): %v", tt.q, err)
			}
			if g, w := contents(got), contents(tt.want); !slices.Equal(g, w) {
				t.Errorf("History(%+v): got %v, want %v", tt.q, g, w)
			}
		})
	}
	t.Run("viewer of messages without a thread id", func(t *testing.T) {
		// Each is a thread of its own: two messages that share the empty
		// thread id are not one thread.
		e := f.msg("legacy", "erin", hub.Normal, "e: erin->frank")
		g := f.msg("legacy", "gina", hub.Normal, "g: gina->hank")
		for _, m := range []*hub.Message{e, g} {
			m.ThreadID = ""
		}
		if err := s.CreateMessage(c, e, []string{"frank"}); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateMessage(c, g, []string{"hank"}); err != nil {
			t.Fatal(err)
		}
		got, err := s.History(c, "legacy", hub.HistoryQuery{Viewer: "frank"})
		if g, w := contents(got), []string{e.Content}; err != nil || !slices.Equal(g, w) {
			t.Errorf("History(viewer frank): got %v, %v; want %v", g, err, w)
		}
	})
	t.Run("default limit 100", func(t *testing.T) {
		for i := range 101 {
			f.send("many", "alice", hub.Normal, fmt.Sprint(i), "bob")
		}
		got, err := s.History(c, "many", hub.HistoryQuery{})
		if err != nil {
			t.Fatalf("History: %v", err)
		}
		if len(got) != 100 {
			t.Fatalf("History with Limit 0: got %d messages, want 100", len(got))
		}
		if got[0].Content != "100" || got[99].Content != "1" {
			t.Errorf("History with Limit 0: got %s..%s, want 100..1", got[0].Content, got[99].Content)
		}
	})
}

func testClearInbox(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	for _, p := range []hub.Priority{hub.Critical, hub.Normal, hub.Low} {
		f.send("ws", "alice", p, string(p), "bob", "carol")
	}
	if _, err := consume(c, s, "ws", "bob", 0, 1); err != nil {
		t.Fatalf("Consume: %v", err)
	}
	n, err := s.ClearInbox(c, "ws", "bob")
	if err != nil || n != 2 {
		t.Errorf("ClearInbox(bob): got %d, %v; want 2, nil", n, err)
	}
	if u, err := s.Unread(c, "ws", "bob", 3); err != nil || u != 0 {
		t.Errorf("Unread(bob) after clear: got %d, %v; want 0, nil", u, err)
	}
	if u, err := s.Unread(c, "ws", "carol", 3); err != nil || u != 3 {
		t.Errorf("Unread(carol) after clearing bob: got %d, %v; want 3, nil", u, err)
	}
	if n, err := s.ClearInbox(c, "ws", "bob"); err != nil || n != 0 {
		t.Errorf("ClearInbox(bob) again: got %d, %v; want 0, nil", n, err)
	}
	if got, err := consume(c, s, "ws", "bob", 3, 10); err != nil || len(got) != 0 {
		t.Errorf("Consume(bob) after clear: got %v, %v; want nothing", contents(got), err)
	}
	if n, err := s.ClearInbox(c, "ws", "nobody"); err != nil || n != 0 {
		t.Errorf("ClearInbox(nobody): got %d, %v; want 0, nil", n, err)
	}
}

func sortedMembers(ms []hub.Member) []hub.Member {
	out := slices.Clone(ms)
	slices.SortFunc(out, func(a, b hub.Member) int {
		if c := strings.Compare(string(a.Type), string(b.Type)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

func checkGroup(t *testing.T, what string, got, want *hub.Group) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: got nil group, want %s", what, want.Name)
	}
	if got.Workspace != want.Workspace || got.Name != want.Name || got.Description != want.Description ||
		got.CreatedBy != want.CreatedBy || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("%s: got %s/%s %q by %q at %v, want %s/%s %q by %q at %v", what,
			got.Workspace, got.Name, got.Description, got.CreatedBy, got.CreatedAt,
			want.Workspace, want.Name, want.Description, want.CreatedBy, want.CreatedAt)
	}
	// Member order is not part of the contract.
	if g, w := sortedMembers(got.Members), sortedMembers(want.Members); !slices.Equal(g, w) {
		t.Errorf("%s: members: got %v, want %v", what, g, w)
	}
}

func testGroups(t *testing.T, s hub.Store) {
	c := ctx(t)
	groups := []*hub.Group{
		{Workspace: "ws", Name: "reviewers", Description: "they review", CreatedBy: "alice", CreatedAt: at(1),
			Members: []hub.Member{{Type: hub.MemberAgent, ID: "bob"}, {Type: hub.MemberRole, ID: "qa"}}},
		{Workspace: "ws", Name: "backend", CreatedBy: "bob", CreatedAt: at(2)},
		{Workspace: "ws", Name: "cats", Description: "meow", CreatedBy: "carol", CreatedAt: at(3),
			Members: []hub.Member{{Type: hub.MemberAgent, ID: "carol"}}},
	}
	for _, g := range groups {
		in := *g
		in.Members = slices.Clone(g.Members)
		if err := s.CreateGroup(c, &in); err != nil {
			t.Fatalf("CreateGroup(%s): %v", g.Name, err)
		}
	}
	for _, want := range groups {
		got, err := s.Group(c, "ws", want.Name)
		if err != nil {
			t.Fatalf("Group(%s): %v", want.Name, err)
		}
		checkGroup(t, "Group("+want.Name+")", got, want)
	}
	dup := &hub.Group{Workspace: "ws", Name: "backend", CreatedBy: "zed", CreatedAt: at(9)}
	wantKind(t, "CreateGroup(duplicate)", s.CreateGroup(c, dup), hub.Conflict)
	if got, err := s.Group(c, "ws", "backend"); err != nil || got.CreatedBy != "bob" {
		t.Errorf("Group(backend) after duplicate create: got %+v, %v; want the original", got, err)
	}

	list, err := s.Groups(c, "ws")
	if err != nil {
		t.Fatalf("Groups: %v", err)
	}
	want := []*hub.Group{groups[1], groups[2], groups[0]} // by name
	if len(list) != len(want) {
		t.Fatalf("Groups: got %d groups, want %d", len(list), len(want))
	}
	for i := range want {
		checkGroup(t, fmt.Sprintf("Groups()[%d]", i), list[i], want[i])
	}
	if list, err := s.Groups(c, "empty"); err != nil || len(list) != 0 {
		t.Errorf("Groups(empty workspace): got %d, %v; want 0, nil", len(list), err)
	}

	// Deleting removes the members too: a new group of that name starts empty.
	if err := s.DeleteGroup(c, "ws", "reviewers"); err != nil {
		t.Fatalf("DeleteGroup: %v", err)
	}
	_, err = s.Group(c, "ws", "reviewers")
	wantKind(t, "Group(deleted)", err, hub.NotFound)
	again := &hub.Group{Workspace: "ws", Name: "reviewers", CreatedBy: "dave", CreatedAt: at(10)}
	if err := s.CreateGroup(c, again); err != nil {
		t.Fatalf("CreateGroup(reviewers again): %v", err)
	}
	got, err := s.Group(c, "ws", "reviewers")
	if err != nil {
		t.Fatalf("Group(reviewers again): %v", err)
	}
	checkGroup(t, "Group(reviewers again)", got, again)
}

func testGroupMembers(t *testing.T, s hub.Store) {
	c := ctx(t)
	g := &hub.Group{Workspace: "ws", Name: "team", CreatedBy: "alice", CreatedAt: at(1)}
	if err := s.CreateGroup(c, g); err != nil {
		t.Fatalf("CreateGroup: %v", err)
	}
	bob := hub.Member{Type: hub.MemberAgent, ID: "bob"}
	dev := hub.Member{Type: hub.MemberRole, ID: "dev"}
	devAgent := hub.Member{Type: hub.MemberAgent, ID: "dev"} // same id, other type
	steps := []struct {
		name string
		do   func() error
		want []hub.Member
	}{
		{"add bob", func() error { return s.AddGroupMember(c, "ws", "team", bob) }, []hub.Member{bob}},
		{"add bob again", func() error { return s.AddGroupMember(c, "ws", "team", bob) }, []hub.Member{bob}},
		{"add role dev", func() error { return s.AddGroupMember(c, "ws", "team", dev) }, []hub.Member{bob, dev}},
		{"add agent dev", func() error { return s.AddGroupMember(c, "ws", "team", devAgent) }, []hub.Member{bob, dev, devAgent}},
		{"remove role dev", func() error { return s.RemoveGroupMember(c, "ws", "team", dev) }, []hub.Member{bob, devAgent}},
		{"remove bob", func() error { return s.RemoveGroupMember(c, "ws", "team", bob) }, []hub.Member{devAgent}},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got, err := s.Group(c, "ws", "team")
		if err != nil {
			t.Fatalf("%s: Group: %v", st.name, err)
		}
		if g, w := sortedMembers(got.Members), sortedMembers(st.want); !slices.Equal(g, w) {
			t.Errorf("%s: members: got %v, want %v", st.name, g, w)
		}
	}
	wantKind(t, "RemoveGroupMember(absent member)", s.RemoveGroupMember(c, "ws", "team", bob), hub.NotFound)
}

func testGroupNotFound(t *testing.T, s hub.Store) {
	c := ctx(t)
	if err := s.CreateGroup(c, &hub.Group{Workspace: "ws", Name: "team", CreatedAt: at(1)}); err != nil {
		t.Fatalf("CreateGroup: %v", err)
	}
	m := hub.Member{Type: hub.MemberAgent, ID: "bob"}
	tests := []struct {
		name string
		do   func() error
	}{
		{"Group", func() error { _, err := s.Group(c, "ws", "nope"); return err }},
		{"Group other workspace", func() error { _, err := s.Group(c, "other", "team"); return err }},
		{"DeleteGroup", func() error { return s.DeleteGroup(c, "ws", "nope") }},
		{"DeleteGroup other workspace", func() error { return s.DeleteGroup(c, "other", "team") }},
		{"AddGroupMember", func() error { return s.AddGroupMember(c, "ws", "nope", m) }},
		{"RemoveGroupMember absent group", func() error { return s.RemoveGroupMember(c, "ws", "nope", m) }},
		{"RemoveGroupMember absent member", func() error { return s.RemoveGroupMember(c, "ws", "team", m) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantKind(t, tt.name, tt.do(), hub.NotFound) })
	}
	if _, err := s.Group(c, "ws", "team"); err != nil {
		t.Errorf("Group(team) after failed calls: %v", err)
	}
}

func testWorkspaceIsolation(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	for _, ws := range []string{"one", "two"} {
		for _, n := range []string{"alice", "bob"} {
			a := &hub.Agent{Workspace: ws, Name: n, Role: "role-" + ws, Status: hub.StatusReady, CreatedAt: at(1), LastSeen: at(1)}
			if err := s.PutAgent(c, a); err != nil {
				t.Fatalf("PutAgent(%s/%s): %v", ws, n, err)
			}
		}
		g := &hub.Group{Workspace: ws, Name: "team", Description: "team of " + ws, CreatedAt: at(1),
			Members: []hub.Member{{Type: hub.MemberAgent, ID: "member-of-" + ws}}}
		if err := s.CreateGroup(c, g); err != nil {
			t.Fatalf("CreateGroup(%s/team): %v", ws, err)
		}
	}
	m1 := f.send("one", "alice", hub.Normal, "in one", "bob")
	m2 := f.send("two", "alice", hub.Normal, "in two", "bob")
	f.send("two", "alice", hub.Normal, "in two again", "bob")

	if err := s.SetAgentStatus(c, "one", "bob", hub.StatusWork); err != nil {
		t.Fatalf("SetAgentStatus: %v", err)
	}
	if b, err := s.Agent(c, "two", "bob"); err != nil || b.Status != hub.StatusReady || b.Role != "role-two" {
		t.Errorf("Agent(two/bob): got %+v, %v; want role-two, ready", b, err)
	}
	if err := s.TouchAgents(c, "one", map[string]time.Time{"alice": at(99)}); err != nil {
		t.Fatalf("TouchAgents: %v", err)
	}
	if a, err := s.Agent(c, "two", "alice"); err != nil || !a.LastSeen.Equal(at(1)) {
		t.Errorf("Agent(two/alice) LastSeen after touching one/alice: got %+v, %v; want %v", a, err, at(1))
	}
	for _, ws := range []string{"one", "two"} {
		as, err := s.Agents(c, ws)
		if err != nil || len(as) != 2 {
			t.Fatalf("Agents(%s): got %d, %v; want 2", ws, len(as), err)
		}
		for _, a := range as {
			if a.Workspace != ws || a.Role != "role-"+ws {
				t.Errorf("Agents(%s): got agent %s/%s role %s", ws, a.Workspace, a.Name, a.Role)
			}
		}
		g, err := s.Group(c, ws, "team")
		if err != nil || len(g.Members) != 1 || g.Members[0].ID != "member-of-"+ws || g.Workspace != ws {
			t.Errorf("Group(%s/team): got %+v, %v; want only member-of-%s", ws, g, err, ws)
		}
	}
	if _, err := s.Message(c, "two", m1.ID); !hub.IsNotFound(err) {
		t.Errorf("Message(two, id from one): got %v, want NotFound", err)
	}
	if n, err := s.Unread(c, "one", "bob", 3); err != nil || n != 1 {
		t.Errorf("Unread(one/bob): got %d, %v; want 1", n, err)
	}
	if h, err := s.History(c, "one", hub.HistoryQuery{Agent: "bob"}); err != nil || !slices.Equal(ids(h), []string{m1.ID}) {
		t.Errorf("History(one, bob): got %v, %v; want [%s]", ids(h), err, m1.ID)
	}
	got, err := consume(c, s, "two", "bob", 3, 1)
	if err != nil || !slices.Equal(ids(got), []string{m2.ID}) {
		t.Errorf("Consume(two/bob): got %v, %v; want [%s]", ids(got), err, m2.ID)
	}
	if n, err := s.ClearInbox(c, "two", "bob"); err != nil || n != 1 {
		t.Errorf("ClearInbox(two/bob): got %d, %v; want 1", n, err)
	}
	if p, err := peek(c, s, "one", "bob", 10); err != nil || !slices.Equal(ids(p), []string{m1.ID}) {
		t.Errorf("Peek(one/bob) after two/bob read everything: got %v, %v; want [%s]", ids(p), err, m1.ID)
	}
	if err := s.DeleteGroup(c, "two", "team"); err != nil {
		t.Fatalf("DeleteGroup(two/team): %v", err)
	}
	if _, err := s.Group(c, "one", "team"); err != nil {
		t.Errorf("Group(one/team) after deleting two/team: %v", err)
	}
	if gs, err := s.Groups(c, "one"); err != nil || len(gs) != 1 {
		t.Errorf("Groups(one): got %d, %v; want 1", len(gs), err)
	}
}

func testWorkspaces(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	got, err := s.Workspaces(c)
	if err != nil || len(got) != 0 {
		t.Fatalf("Workspaces of an empty store: got %v, %v; want none", got, err)
	}
	if err := s.PutAgent(c, &hub.Agent{Workspace: "ws-agents", Name: "alice", CreatedAt: at(1)}); err != nil {
		t.Fatalf("PutAgent: %v", err)
	}
	f.send("ws-messages", "alice", hub.Normal, "hi", "bob")
	if err := s.CreateGroup(c, &hub.Group{Workspace: "ws-groups", Name: "g", CreatedAt: at(1)}); err != nil {
		t.Fatalf("CreateGroup: %v", err)
	}
	if err := s.CreateGroup(c, &hub.Group{Workspace: "ws-agents", Name: "g", CreatedAt: at(1)}); err != nil {
		t.Fatalf("CreateGroup: %v", err)
	}
	got, err = s.Workspaces(c)
	if err != nil {
		t.Fatalf("Workspaces: %v", err)
	}
	slices.Sort(got)
	if want := []string{"ws-agents", "ws-groups", "ws-messages"}; !slices.Equal(got, want) {
		t.Errorf("Workspaces: got %v, want %v", got, want)
	}
}

func testContextCanceled(t *testing.T, s hub.Store) {
	f := newFixture(t, s)
	f.send("ws", "alice", hub.Normal, "waiting", "bob")
	c, cancel := context.WithCancel(t.Context())
	cancel()
	m := f.msg("ws", "alice", hub.Normal, "never stored")
	calls := []struct {
		name string
		do   func() error
	}{
		{"PutAgent", func() error { return s.PutAgent(c, &hub.Agent{Workspace: "ws", Name: "zed", CreatedAt: at(1)}) }},
		{"Agent", func() error { _, err := s.Agent(c, "ws", "alice"); return err }},
		{"Agents", func() error { _, err := s.Agents(c, "ws"); return err }},
		{"CreateMessage", func() error { return s.CreateMessage(c, m, []string{"bob"}) }},
		{"Consume", func() error { _, err := consume(c, s, "ws", "bob", 3, 10); return err }},
		{"Unread", func() error { _, err := s.Unread(c, "ws", "bob", 3); return err }},
		{"Peek", func() error { _, err := s.Peek(c, "ws", "bob", 10); return err }},
		{"History", func() error { _, err := s.History(c, "ws", hub.HistoryQuery{}); return err }},
		{"ClearInbox", func() error { _, err := s.ClearInbox(c, "ws", "bob"); return err }},
		{"CreateGroup", func() error { return s.CreateGroup(c, &hub.Group{Workspace: "ws", Name: "g", CreatedAt: at(1)}) }},
		{"Groups", func() error { _, err := s.Groups(c, "ws"); return err }},
		{"Workspaces", func() error { _, err := s.Workspaces(c); return err }},
	}
	for _, tt := range calls {
		if err := tt.do(); err == nil {
			t.Errorf("%s with a cancelled context: got no error, want one", tt.name)
		}
	}
	// Nothing the cancelled calls would have written is there.
	bg := t.Context()
	if _, err := s.Agent(bg, "ws", "zed"); !hub.IsNotFound(err) {
		t.Errorf("Agent(zed) after cancelled PutAgent: got %v, want NotFound", err)
	}
	if _, err := s.Message(bg, "ws", m.ID); !hub.IsNotFound(err) {
		t.Errorf("Message after cancelled CreateMessage: got %v, want NotFound", err)
	}
	if n, err := s.Unread(bg, "ws", "bob", 3); err != nil || n != 1 {
		t.Errorf("Unread(bob) after cancelled Consume and ClearInbox: got %d, %v; want 1, nil", n, err)
	}
	if _, err := s.Group(bg, "ws", "g"); !hub.IsNotFound(err) {
		t.Errorf("Group(g) after cancelled CreateGroup: got %v, want NotFound", err)
	}
}

// testIdempotencyKey: a sender's key names one message of the workspace:
// MessageByKey finds it, a second message of the sender with the key is a
// conflict (and stores nothing), and the same key of another sender or in
// another workspace is another key.
func testIdempotencyKey(t *testing.T, s hub.Store) {
	c := ctx(t)
	f := newFixture(t, s)
	keyed := func(ws, from, key string) (*hub.Message, error) {
		m := f.msg(ws, from, hub.Normal, "keyed "+key)
		m.To, m.IdempotencyKey = "bob", key
		return m, s.CreateMessage(c, m, []string{"bob"})
	}
	first, err := keyed("ws", "alice", "k1")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.MessageByKey(c, "ws", "alice", "k1")
	if err != nil || got.ID != first.ID {
		t.Fatalf("MessageByKey: got %v, %v; want %s", got, err, first.ID)
	}
	if _, err := keyed("ws", "alice", "k1"); hub.KindOf(err) != hub.Conflict {
		t.Errorf("a second message of alice with k1: got %v, want a conflict", err)
	}
	if n, _ := s.Unread(c, "ws", "bob", 3); n != 1 {
		t.Errorf("bob's inbox: %d, want the first message only", n)
	}
	for _, w := range []struct{ ws, from string }{{"ws", "carol"}, {"other", "alice"}} {
		if _, err := keyed(w.ws, w.from, "k1"); err != nil {
			t.Errorf("k1 of %s in %s: %v, want it stored", w.from, w.ws, err)
		}
	}
	for _, k := range []struct{ ws, from, key string }{{"ws", "alice", "k2"}, {"ws", "bob", "k1"}} {
		if _, err := s.MessageByKey(c, k.ws, k.from, k.key); !hub.IsNotFound(err) {
			t.Errorf("MessageByKey(%s, %s, %s): got %v, want not found", k.ws, k.from, k.key, err)
		}
	}
	// Messages without a key never clash.
	f.send("ws", "alice", hub.Normal, "plain one", "bob")
	f.send("ws", "alice", hub.Normal, "plain two", "bob")
}
