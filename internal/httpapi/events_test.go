package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/mcpserver"
	"github.com/parley-dev/parley/internal/ops"
	"github.com/parley-dev/parley/internal/store/sqlite"
)

// eventsEnv is the route table over a real hub on a SQLite file, served on
// a Unix socket as the daemon serves it: /mcp, the event stream and the JSON
// API. (The socket's small buffers matter to slow consumers: loopback TCP's
// grow to megabytes.)
type eventsEnv struct {
	hub    *hub.Hub
	events *Events
	client *http.Client
}

func newEventsEnv(t testing.TB, buf int) *eventsEnv {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h := hub.New(db, nil)
	o := ops.New(h, nil)
	ev := NewEvents(h, &EventsOptions{Buffer: buf})
	t.Cleanup(ev.Close)
	mux := http.NewServeMux()
	Routes(mux, o, Endpoints{MCP: mcpserver.New(o, nil), Events: ev})
	srv := httptest.NewUnstartedServer(mux)
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return new(net.Dialer).DialContext(ctx, "unix", sock)
	}}}
	return &eventsEnv{hub: h, events: ev, client: client}
}

// dial opens the event stream with a real WebSocket client.
func (e *eventsEnv) dial(t testing.TB, query string, h http.Header) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws://parley"+api.Prefix+"/events"+query, &websocket.DialOptions{HTTPClient: e.client, HTTPHeader: h})
	if err != nil {
		var body []byte
		if resp != nil && resp.Body != nil {
			body, _ = io.ReadAll(resp.Body)
		}
		t.Fatalf("dial events%s: %v %s", query, err, body)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func nextEvent(t testing.TB, c *websocket.Conn) api.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read event: %v", err)
	}
	var e api.Event
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("decode event %s: %v", b, err)
	}
	return e
}

// noEvent checks that nothing arrives on c for a short while.
func noEvent(t testing.TB, c *websocket.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, b, err := c.Read(ctx); err == nil {
		t.Errorf("got event %s, want none", b)
	}
}

func TestEventsStream(t *testing.T) {
	e := newEventsEnv(t, 0)
	ctx := context.Background()
	h := e.hub

	ws1 := e.dial(t, "", http.Header{api.HeaderWorkspace: {"ws1"}})
	msgs := e.dial(t, "?workspace=ws1&kinds=message.sent", nil)
	ws2 := e.dial(t, "?workspace=ws2", nil)
	all := e.dial(t, "?all=true&kinds=agent.joined", nil)

	for _, n := range []string{"alice", "bob"} {
		if _, err := h.Join(ctx, hub.JoinRequest{Workspace: "ws1", Name: n, Role: "dev"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Join(ctx, hub.JoinRequest{Workspace: "ws2", Name: "carol"}); err != nil {
		t.Fatal(err)
	}
	long := "hello bob\n" + strings.Repeat("é", 200)
	res, err := h.Send(ctx, hub.SendRequest{Workspace: "ws1", From: "alice", To: "@dev", Content: long, Priority: "high"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.CreateGroup(ctx, "ws1", "team", "", ""); err != nil {
		t.Fatal(err)
	}
	if err := h.SetStatus(ctx, "ws1", "bob", hub.StatusWork); err != nil {
		t.Fatal(err)
	}
	// An MCP session that ends makes its agent leave.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://parley/mcp?agent=bob&workspace=ws1", HTTPClient: e.client},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	cs.Close()

	type want struct{ kind, agent, extra string }
	wants := []want{
		{"agent.joined", "alice", "dev"},
		{"agent.joined", "bob", "dev"},
		{"message.sent", "alice", ""},
		{"group.changed", "", "created"},
		{"agent.status", "bob", "work"},
		{"agent.left", "bob", ""},
	}
	for i, w := range wants {
		e := nextEvent(t, ws1)
		if e.Kind != w.kind || e.Agent != w.agent || e.Workspace != "ws1" || e.Time.IsZero() {
			t.Fatalf("ws1 event %d: got %+v, want kind %s agent %s in ws1", i, e, w.kind, w.agent)
		}
		switch e.Kind {
		case "agent.joined":
			if e.Role != w.extra {
				t.Errorf("joined role: got %q, want %q", e.Role, w.extra)
			}
		case "agent.status":
			if e.Status != w.extra {
				t.Errorf("status: got %q, want %q", e.Status, w.extra)
			}
		case "group.changed":
			if e.Group != "team" || e.Change != w.extra {
				t.Errorf("group event: got %+v, want team created", e)
			}
		case "message.sent":
			preview := "hello bob\n" + strings.Repeat("é", 110) + "…"
			if e.ID != res.Message.ID || e.From != "alice" || e.To != "@dev" || e.Priority != "high" ||
				strings.Join(e.Recipients, ",") != "bob" || e.Preview != preview {
				t.Errorf("message event: got %+v, want id %s from alice to @dev (bob), high, preview of 120 characters", e, res.Message.ID)
			}
		}
	}

	if e := nextEvent(t, msgs); e.Kind != "message.sent" || e.ID != res.Message.ID {
		t.Errorf("kinds=message.sent: got %+v, want the message", e)
	}
	noEvent(t, msgs)
	if e := nextEvent(t, ws2); e.Kind != "agent.joined" || e.Agent != "carol" {
		t.Errorf("ws2: got %+v, want carol joined", e)
	}
	noEvent(t, ws2)
	var got []string
	for range 3 {
		e := nextEvent(t, all)
		got = append(got, e.Workspace+"/"+e.Agent)
	}
	if strings.Join(got, " ") != "ws1/alice ws1/bob ws2/carol" {
		t.Errorf("all=true joins: got %v", got)
	}
	noEvent(t, all)
}

// TestEventsSlowConsumer checks that a subscriber that does not read is
// dropped with a reason, while senders go on unhindered.
func TestEventsSlowConsumer(t *testing.T) {
	env := newEventsEnv(t, 4)
	ctx := context.Background()
	h := env.hub
	if _, err := h.Join(ctx, hub.JoinRequest{Workspace: "w", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	slow := env.dial(t, "?workspace=w&kinds=message.sent", nil)

	// Enough events to fill the socket's buffers and then the queue. Every
	// send must return: a stalled publisher would hang here. Sending stops
	// once the subscriber is dropped, so the reader below starts before the
	// server's close handshake gives up (5 s; sends on a loaded machine are
	// slow enough to outlast it).
	content := strings.Repeat("x", 200)
	const n = 1500
	sent := 0
	for ; sent < n && !droppedAll(env.events); sent++ {
		if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "a", Content: content}); err != nil {
			t.Fatalf("send %d: %v", sent, err)
		}
	}
	if !droppedAll(env.events) {
		t.Fatalf("after %d events the slow subscriber is still subscribed", n)
	}

	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	read := 0
	for {
		_, _, err := slow.Read(rctx)
		if err == nil {
			read++
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) {
			t.Fatalf("after %d events: got %v, want a close frame", read, err)
		}
		if ce.Code != CloseSlowConsumer || !strings.HasPrefix(ce.Reason, "slow consumer: ") || !strings.HasSuffix(ce.Reason, " events behind") {
			t.Fatalf("close: got %d %q, want %d \"slow consumer: N events behind\"", ce.Code, ce.Reason, CloseSlowConsumer)
		}
		break
	}
	if read >= sent {
		t.Errorf("read %d events, want fewer than the %d sent (the consumer was dropped)", read, sent)
	}
	// The stream forgets the dropped subscriber and still serves new ones.
	fresh := env.dial(t, "?workspace=w", nil)
	if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "a", Content: "after"}); err != nil {
		t.Fatal(err)
	}
	if e := nextEvent(t, fresh); e.Preview != "after" {
		t.Errorf("fresh subscriber: got %+v, want the new message", e)
	}
	env.events.mu.RLock()
	subs := len(env.events.subs)
	env.events.mu.RUnlock()
	if subs != 1 {
		t.Errorf("subscribers: got %d, want 1 (the dropped one removed)", subs)
	}
}

// droppedAll reports whether every subscriber of the event stream has been
// dropped (or is gone).
func droppedAll(ev *Events) bool {
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	for s := range ev.subs {
		if !s.dropped.Load() {
			return false
		}
	}
	return true
}

// TestEventsCoordination: reservations granted and released, and a queue's
// task claimed and completed, reach the event stream (issue 15).
func TestEventsCoordination(t *testing.T) {
	e := newEventsEnv(t, 0)
	ctx := context.Background()
	h := e.hub
	c := e.dial(t, "?workspace=ws1&kinds=reservations.changed,task.claimed,task.completed", nil)

	res, err := h.Reserve(ctx, hub.ReserveRequest{Workspace: "ws1", Agent: "alice", Paths: []string{"src/**"}, TTL: time.Hour, Exclusive: true, Reason: "refactor"})
	if err != nil || len(res.Granted) != 1 {
		t.Fatalf("reserve: %+v, %v", res, err)
	}
	if ev := nextEvent(t, c); ev.Kind != "reservations.changed" || ev.Change != "granted" || ev.Agent != "alice" ||
		len(ev.Reservations) != 1 || ev.Reservations[0].Path != "src/**" || ev.Reservations[0].Reason != "refactor" {
		t.Errorf("after reserve: got %+v, want alice's src/** granted", ev)
	}
	if _, err := h.ReleaseReservations(ctx, "ws1", "alice", nil, nil); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, c); ev.Kind != "reservations.changed" || ev.Change != "released" || len(ev.Reservations) != 1 {
		t.Errorf("after release: got %+v, want src/** released", ev)
	}

	sent, err := h.Send(ctx, hub.SendRequest{Workspace: "ws1", From: "boss", To: "queue:review", Content: "review PR 1"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := h.Claim(ctx, hub.ClaimRequest{Workspace: "ws1", Agent: "rita", Queue: "review", Reader: "rita-key", Timeout: time.Second})
	if err != nil || d == nil {
		t.Fatalf("claim: %+v, %v", d, err)
	}
	if ev := nextEvent(t, c); ev.Kind != "task.claimed" || ev.ID != sent.Message.ID || ev.Agent != "rita" {
		t.Errorf("after claim: got %+v, want task %s claimed by rita", ev, sent.Message.ID)
	}
	if _, err := h.Complete(ctx, hub.CompleteRequest{Workspace: "ws1", Agent: "rita", Readers: []string{"rita-key"}, TaskID: sent.Message.ID, Result: "LGTM"}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, c); ev.Kind != "task.completed" || ev.ID != sent.Message.ID || ev.Status != "task_completed" {
		t.Errorf("after complete: got %+v, want task %s completed", ev, sent.Message.ID)
	}
	noEvent(t, c)
}
