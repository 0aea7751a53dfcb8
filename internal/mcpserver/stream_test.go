package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/bridge"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/mcpserver"
	"github.com/parley-dev/parley/internal/ops"
	"github.com/parley-dev/parley/internal/store/sqlite"
)

// streamServer serves e's /mcp on a Unix socket and counts the requests
// that are not stream upgrades.
func streamServer(t testing.TB, e *env) (sock string, posts *atomic.Int64) {
	t.Helper()
	posts = new(atomic.Int64)
	return serveUnix(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			posts.Add(1)
		}
		e.MCP.ServeHTTP(w, r)
	})), posts
}

// serveUnix serves h on a Unix socket until the test ends.
func serveUnix(t testing.TB, h http.Handler) (sock string) {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "ps")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock = filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return sock
}

// upgrade opens a stream session of agent, as the bridge does.
func upgrade(t testing.TB, sock, ws, agent string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, br, err := bridge.DialStream(context.Background(), "unix", sock, "http://parley/mcp",
		http.Header{api.HeaderAgent: {agent}, api.HeaderWorkspace: {ws}}, nil)
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	return c, br
}

// joinAll joins the agents to ws.
func joinAll(t *testing.T, e *env, ws string, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := e.Hub.Join(context.Background(), hub.JoinRequest{Workspace: ws, Name: n, Role: "dev"}); err != nil {
			t.Fatal(err)
		}
	}
}

func sendTo(t *testing.T, e *env, ws, to, content string) string {
	t.Helper()
	res, err := e.Hub.Send(context.Background(), hub.SendRequest{Workspace: ws, From: "alice", To: to, Content: content})
	if err != nil {
		t.Fatal(err)
	}
	return res.Message.ID
}

func deliveryOf(t *testing.T, e *env, ws, id string) *hub.Delivery {
	t.Helper()
	st, err := e.Hub.MessageStatus(context.Background(), ws, "", id)
	if err != nil || len(st.Deliveries) != 1 {
		t.Fatalf("message status of %s: %v, %v", id, st, err)
	}
	return st.Deliveries[0]
}

// TestStreamSession: `parley mcp serve`'s bridge gets its session as one
// stream: the identity comes from the upgrade's headers, no request goes
// over plain HTTP, a message it handed to its client is confirmed, and the
// session ends when the bridge does.
func TestStreamSession(t *testing.T) {
	e := newEnv(t)
	const ws = "stream"
	joinAll(t, e, ws, "alice", "bob")
	sock, posts := streamServer(t, e)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- bridge.Run(context.Background(), inR, outW, &bridge.Options{SocketPath: sock, Stream: true,
			Header: http.Header{api.HeaderHello: {api.Hello{Agent: "bob", Workspace: ws}.Header()}}})
		outW.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
		&mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil || res.IsError {
		t.Fatalf("whoami: %v %v", res, err)
	}
	if b, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(b), `"bob"`) {
		t.Errorf("whoami over the stream: got %s, want bob", b)
	}
	id := sendTo(t, e, ws, "bob", "over the stream")
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "check_messages"})
	if err != nil || res.IsError {
		t.Fatalf("check_messages: %v %v", res, err)
	}
	waitFor(t, "the bridge's confirmation", func() bool { return deliveryOf(t, e, ws, id).State == hub.Read })
	if n := posts.Load(); n != 0 {
		t.Errorf("plain HTTP requests: got %d, want 0 (everything on the stream)", n)
	}
	if e.MCP.Sessions() != 1 {
		t.Errorf("sessions: got %d, want 1", e.MCP.Sessions())
	}
	cs.Close()
	if err := <-done; err != nil {
		t.Errorf("bridge: %v", err)
	}
	waitFor(t, "the session to end with its stream", func() bool { return e.MCP.Sessions() == 0 })
	if d := deliveryOf(t, e, ws, id); d.State != hub.Read {
		t.Errorf("a confirmed message after the session ended: state %s, want read", d.State)
	}
}

// TestStreamSessionOverTLS: the bridge of `mcp serve --server https://...`
// gets its stream session over TLS (HTTP/1.1 under it, for the upgrade), not
// plain HTTP requests, and confirms what it handed on, as on the socket.
func TestStreamSessionOverTLS(t *testing.T) {
	e := newEnv(t)
	const ws = "stream"
	joinAll(t, e, ws, "alice", "bob")
	var posts atomic.Int64
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			posts.Add(1)
		}
		e.MCP.ServeHTTP(w, r)
	}))
	ts.StartTLS()
	defer ts.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- bridge.Run(context.Background(), inR, outW, &bridge.Options{URL: ts.URL + "/mcp", Stream: true,
			TLSConfig: ts.Client().Transport.(*http.Transport).TLSClientConfig,
			Header:    http.Header{api.HeaderAgent: {"bob"}, api.HeaderWorkspace: {ws}}})
		outW.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
		&mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	id := sendTo(t, e, ws, "bob", "over TLS")
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "check_messages"}); err != nil || res.IsError {
		t.Fatalf("check_messages: %v %v", res, err)
	}
	waitFor(t, "the bridge's confirmation", func() bool { return deliveryOf(t, e, ws, id).State == hub.Read })
	if n := posts.Load(); n != 0 {
		t.Errorf("plain HTTP requests over TLS: got %d, want 0 (everything on the stream)", n)
	}
	cs.Close()
	if err := <-done; err != nil {
		t.Errorf("bridge: %v", err)
	}
}

// TestStreamUnconfirmedGoesBack: a stream client that read a response
// carrying a message but hung up without confirming it gets it again,
// marked: the session ends with its connection.
func TestStreamUnconfirmedGoesBack(t *testing.T) {
	e := newEnv(t)
	const ws = "stream"
	joinAll(t, e, ws, "alice", "bob")
	sock, _ := streamServer(t, e)
	id := sendTo(t, e, ws, "bob", "never confirmed")

	c, br := upgrade(t, sock, ws, "bob")
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	for _, l := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"check_messages","arguments":{}}}`,
	} {
		fmt.Fprintln(c, l)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read the answer: %v", err)
		}
		if strings.HasPrefix(line, `{"jsonrpc":"2.0","id":2,`) {
			if !strings.Contains(line, api.MetaDelivered) || !strings.Contains(line, id) {
				t.Fatalf("check_messages: got %s, want message %s listed under %s", line, id, api.MetaDelivered)
			}
			break
		}
	}
	if d := deliveryOf(t, e, ws, id); d.State != hub.Delivered {
		t.Fatalf("before the hang-up: state %s, want delivered (leased to the stream)", d.State)
	}
	c.Close()
	waitFor(t, "the message back in the inbox", func() bool { return deliveryOf(t, e, ws, id).State == hub.Redelivered })
	waitFor(t, "the session to end", func() bool { return e.MCP.Sessions() == 0 })
}

// pushStream opens a stream session of agent that asks for pushes, and
// initializes it.
func pushStream(t *testing.T, sock, ws, agent string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, br, err := bridge.DialStream(context.Background(), "unix", sock, "http://parley/mcp",
		http.Header{api.HeaderHello: {api.Hello{Agent: agent, Workspace: ws, Push: true}.Header()}}, nil)
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintln(c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	fmt.Fprintln(c, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c, br
}

// pushedLine reads the stream until the daemon pushes a message, and
// returns it.
func pushedLine(t *testing.T, br *bufio.Reader) (msg api.MessageInfo, ids []string) {
	t.Helper()
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read the push: %v", err)
		}
		var n struct {
			Method string `json:"method"`
			Params struct {
				Message api.MessageInfo `json:"message"`
				Meta    struct {
					IDs []string `json:"parley/delivered"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(line), &n) == nil && n.Method == api.MethodMessage {
			return n.Params.Message, n.Params.Meta.IDs
		}
	}
}

// TestStreamPush: a stream that asks for pushes gets each of its agent's
// messages as it arrives, leased to the session and recorded as the
// channel's wake-up; one it confirms is read, one it never confirms goes
// back, marked, when the session ends, and the next push says it is a
// repeat.
func TestStreamPush(t *testing.T) {
	e := newEnv(t)
	const ws = "stream"
	joinAll(t, e, ws, "alice", "bob")
	sock, _ := streamServer(t, e)
	c, br := pushStream(t, sock, ws, "bob")
	first := sendTo(t, e, ws, "bob", "pushed")
	m, ids := pushedLine(t, br)
	if m.MessageID != first || m.Content != "pushed" || m.From != "alice" || len(ids) != 1 || ids[0] != first {
		t.Fatalf("push: got %+v listing %v, want message %s listing itself", m, ids, first)
	}
	d := deliveryOf(t, e, ws, first)
	if d.State != hub.Delivered || d.WokeVia != hub.WakeChannel {
		t.Fatalf("pushed, not confirmed: state %s via %q, want delivered (leased) via channel", d.State, d.WokeVia)
	}
	fmt.Fprintf(c, `{"jsonrpc":"2.0","method":%q,"params":{"messageIds":[%q]}}`+"\n", api.MethodDelivered, first)
	waitFor(t, "the confirmation", func() bool { return deliveryOf(t, e, ws, first).State == hub.Read })

	second := sendTo(t, e, ws, "bob", "never confirmed")
	if m, _ := pushedLine(t, br); m.MessageID != second || m.Redelivered {
		t.Fatalf("second push: got %+v, want %s, not a repeat", m, second)
	}
	c.Close()
	waitFor(t, "the unconfirmed push back in the inbox", func() bool { return deliveryOf(t, e, ws, second).State == hub.Redelivered })
	waitFor(t, "the session to end", func() bool { return e.MCP.Sessions() == 0 })

	_, br = pushStream(t, sock, ws, "bob")
	if m, _ := pushedLine(t, br); m.MessageID != second || !m.Redelivered || m.DeliveryCount != 2 {
		t.Fatalf("push to the next session: got %+v, want %s marked redelivered, count 2", m, second)
	}
	if d := deliveryOf(t, e, ws, first); d.State != hub.Read {
		t.Errorf("the confirmed message: state %s, want read", d.State)
	}
}

// TestStreamPushOnlyWhenAsked: a daemon pushes only to a stream whose
// hello asks; a session with no agent has nothing to push.
func TestStreamPushOnlyWhenAsked(t *testing.T) {
	e := newEnv(t)
	sock, _ := streamServer(t, e)
	for _, tc := range []struct {
		name  string
		hello api.Hello
		want  bool
	}{
		{"asked", api.Hello{Agent: "bob", Workspace: "w", Push: true}, true},
		{"not asked", api.Hello{Agent: "carol", Workspace: "w"}, false},
		{"no agent", api.Hello{Workspace: "w", Push: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, br, err := bridge.DialStream(context.Background(), "unix", sock, "http://parley/mcp", http.Header{api.HeaderHello: {tc.hello.Header()}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			fmt.Fprintln(c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
			br.ReadBytes('\n')
			fmt.Fprintln(c, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			to := tc.hello.Agent
			if to == "" {
				to = "dave" // nobody's session
			}
			id := sendTo(t, e, "w", to, "push? "+tc.name)
			if tc.want {
				if m, _ := pushedLine(t, br); m.MessageID != id {
					t.Errorf("pushed %+v, want %s", m, id)
				}
				return
			}
			// A round trip on the stream, and the message is still queued.
			fmt.Fprintln(c, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
			if line, err := br.ReadBytes('\n'); err != nil || !strings.Contains(string(line), `"id":2`) {
				t.Fatalf("ping: %s %v (a push first?)", line, err)
			}
			if d := deliveryOf(t, e, "w", id); d.State != hub.Queued {
				t.Errorf("message: %s, want queued (not pushed)", d.State)
			}
		})
	}
}

// pusher is a bridge extension that takes pushed messages, as `mcp serve
// --channel` does.
type pusher struct{}

func (p *pusher) InitResult(msg []byte) []byte                                       { return msg }
func (p *pusher) Intercept(context.Context, string, []byte, func([]byte) error) bool { return false }
func (p *pusher) Push(params json.RawMessage) []byte {
	var n struct {
		Message api.MessageInfo `json:"message"`
	}
	json.Unmarshal(params, &n)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/test/pushed",
		"params": map[string]string{"content": n.Message.Content, "id": n.Message.MessageID}})
	return b
}

// notes hands a test the notifications the client gets.
type notes struct {
	mcp.Transport
	ch chan string
}

type notesConn struct {
	mcp.Connection
	ch chan string
}

func (n *notes) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := n.Transport.Connect(ctx)
	return notesConn{c, n.ch}, err
}

func (c notesConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Request); ok && r.Method == "notifications/test/pushed" {
		c.ch <- string(r.Params)
	}
	return m, err
}

// TestBridgePush: the bridge of an extension asks the daemon for pushes,
// writes what the extension renders of each to its client and confirms it.
func TestBridgePush(t *testing.T) {
	e := newEnv(t)
	const ws = "stream"
	joinAll(t, e, ws, "alice", "bob")
	sock, _ := streamServer(t, e)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- bridge.Run(context.Background(), inR, outW, &bridge.Options{SocketPath: sock, Stream: true, Extension: &pusher{},
			Header: http.Header{api.HeaderHello: {api.Hello{Agent: "bob", Workspace: ws, Push: true}.Header()}}})
		outW.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tr := &notes{Transport: &mcp.IOTransport{Reader: outR, Writer: inW}, ch: make(chan string, 8)}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	id := sendTo(t, e, ws, "bob", "through the bridge")
	select {
	case got := <-tr.ch:
		if !strings.Contains(got, id) || !strings.Contains(got, "through the bridge") {
			t.Errorf("pushed: got %s, want message %s", got, id)
		}
	case <-ctx.Done():
		t.Fatal("no push reached the client")
	}
	waitFor(t, "the bridge's confirmation", func() bool { return deliveryOf(t, e, ws, id).State == hub.Read })
	cs.Close()
	if err := <-done; err != nil {
		t.Errorf("bridge: %v", err)
	}
}

// BenchmarkStreamWhoami compares one whoami over Streamable HTTP with the
// same call on the daemon's stream, from a go-sdk client on it directly and
// through the bridge (in process, over pipes): the bridge's own cost.
func BenchmarkStreamWhoami(b *testing.B) {
	for _, via := range []string{"http", "stream", "bridge"} {
		b.Run(via, func(b *testing.B) {
			sock := benchServer(b)
			ctx := context.Background()
			var tr mcp.Transport
			switch via {
			case "http":
				hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					return net.Dial("unix", sock)
				}}}
				tr = &mcp.StreamableClientTransport{Endpoint: "http://x/mcp?agent=a&workspace=w", HTTPClient: hc}
			case "stream":
				c, br := upgrade(b, sock, "w", "a")
				defer c.Close()
				tr = &mcp.IOTransport{Reader: struct {
					io.Reader
					io.Closer
				}{br, c}, Writer: c}
			}
			var cs *mcp.ClientSession
			if via == "bridge" {
				cs = bridged(b, sock, "a", nil, nil)
			} else {
				var err error
				if cs, err = mcp.NewClient(&mcp.Implementation{Name: "b", Version: "1"}, nil).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}); err != nil {
					b.Fatal(err)
				}
				defer cs.Close()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStreamPush measures send_message through one bridge until the
// recipient's bridge (a Pusher, as `mcp serve --channel`) writes the pushed
// message to its client, all in process over pipes: with -cpuprofile, where
// the daemon's, the bridges' and the SDK's time goes.
func BenchmarkStreamPush(b *testing.B) {
	sock := benchServer(b)
	ctx := context.Background()
	pushes := make(chan string, 1)
	bridged(b, sock, "bob", &pusher{}, func(t mcp.Transport) mcp.Transport { return &notes{Transport: t, ch: pushes} })
	alice := bridged(b, sock, "alice", nil, nil)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"to": "bob", "content": "ping"}}); err != nil {
			b.Fatal(err)
		}
		<-pushes
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "push-p50-us")
}

// benchServer serves /mcp of a daemon's parts on a Unix socket, with a
// SQLite store, until the benchmark ends.
func benchServer(b *testing.B) (sock string) {
	dir, _ := os.MkdirTemp("/tmp", "pm")
	b.Cleanup(func() { os.RemoveAll(dir) })
	db, err := sqlite.Open(context.Background(), filepath.Join(dir, "p.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	sock, _ = streamServer(b, &env{MCP: mcpserver.New(ops.New(hub.New(db, nil), nil), nil)})
	return sock
}

// bridged connects a go-sdk client as agent through the bridge (in
// process, over pipes), with ext; wrap, if set, wraps the client's
// transport.
func bridged(b *testing.B, sock, agent string, ext bridge.Extension, wrap func(mcp.Transport) mcp.Transport) *mcp.ClientSession {
	ctx := context.Background()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		bridge.Run(ctx, inR, outW, &bridge.Options{SocketPath: sock, Stream: true, Extension: ext,
			Header: http.Header{api.HeaderHello: {api.Hello{Agent: agent, Workspace: "w", Push: ext != nil}.Header()}}})
		outW.Close()
		close(done)
	}()
	b.Cleanup(func() { inW.Close(); <-done })
	var tr mcp.Transport = &mcp.IOTransport{Reader: outR, Writer: inW}
	if wrap != nil {
		tr = wrap(tr)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "b", Version: "1"}, nil).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}
