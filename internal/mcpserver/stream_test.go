package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
	posts = new(atomic.Int64)
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			posts.Add(1)
		}
		e.mcp.ServeHTTP(w, r)
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return sock, posts
}

// upgrade opens a stream session of agent, as the bridge does.
func upgrade(t testing.TB, sock, ws, agent string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, br, err := bridge.DialStream(context.Background(), "unix", sock, "http://parley/mcp",
		http.Header{api.HeaderAgent: {agent}, api.HeaderWorkspace: {ws}})
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	return c, br
}

func sendTo(t *testing.T, e *env, ws, to, content string) string {
	t.Helper()
	res, err := e.hub.Send(context.Background(), hub.SendRequest{Workspace: ws, From: "alice", To: to, Content: content})
	if err != nil {
		t.Fatal(err)
	}
	return res.Message.ID
}

func deliveryOf(t *testing.T, e *env, ws, id string) *hub.Delivery {
	t.Helper()
	st, err := e.hub.MessageStatus(context.Background(), ws, "", id)
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
	for _, n := range []string{"alice", "bob"} {
		if _, err := e.hub.Join(context.Background(), hub.JoinRequest{Workspace: ws, Name: n, Role: "dev"}); err != nil {
			t.Fatal(err)
		}
	}
	sock, posts := streamServer(t, e)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- bridge.Run(context.Background(), inR, outW, &bridge.Options{SocketPath: sock, Stream: true,
			Header: http.Header{api.HeaderAgent: {"bob"}, api.HeaderWorkspace: {ws}}})
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
	if e.mcp.Sessions() != 1 {
		t.Errorf("sessions: got %d, want 1", e.mcp.Sessions())
	}
	cs.Close()
	if err := <-done; err != nil {
		t.Errorf("bridge: %v", err)
	}
	waitFor(t, "the session to end with its stream", func() bool { return e.mcp.Sessions() == 0 })
	if d := deliveryOf(t, e, ws, id); d.State != hub.Read {
		t.Errorf("a confirmed message after the session ended: state %s, want read", d.State)
	}
}

// TestStreamUnconfirmedGoesBack: a stream client that read a response
// carrying a message but hung up without confirming it gets it again,
// marked: the session ends with its connection.
func TestStreamUnconfirmedGoesBack(t *testing.T) {
	e := newEnv(t)
	const ws = "stream"
	for _, n := range []string{"alice", "bob"} {
		if _, err := e.hub.Join(context.Background(), hub.JoinRequest{Workspace: ws, Name: n, Role: "dev"}); err != nil {
			t.Fatal(err)
		}
	}
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
			if !strings.Contains(line, bridge.MetaDelivered) || !strings.Contains(line, id) {
				t.Fatalf("check_messages: got %s, want message %s listed under %s", line, id, bridge.MetaDelivered)
			}
			break
		}
	}
	if d := deliveryOf(t, e, ws, id); d.State != hub.Delivered {
		t.Fatalf("before the hang-up: state %s, want delivered (leased to the stream)", d.State)
	}
	c.Close()
	waitFor(t, "the message back in the inbox", func() bool { return deliveryOf(t, e, ws, id).State == hub.Redelivered })
	waitFor(t, "the session to end", func() bool { return e.mcp.Sessions() == 0 })
}

// BenchmarkStreamWhoami compares one whoami over Streamable HTTP with the
// same call on the daemon's stream, from a go-sdk client on it directly and
// through the bridge (in process, over pipes): the bridge's own cost.
func BenchmarkStreamWhoami(b *testing.B) {
	for _, via := range []string{"http", "stream", "bridge"} {
		b.Run(via, func(b *testing.B) {
			dir, _ := os.MkdirTemp("/tmp", "pm")
			defer os.RemoveAll(dir)
			db, err := sqlite.Open(context.Background(), filepath.Join(dir, "p.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			e := &env{mcp: mcpserver.New(ops.New(hub.New(db, nil), nil), nil)}
			sock, _ := streamServer(b, e)
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
			case "bridge":
				inR, inW := io.Pipe()
				outR, outW := io.Pipe()
				done := make(chan struct{})
				go func() {
					bridge.Run(ctx, inR, outW, &bridge.Options{SocketPath: sock, Stream: true,
						Header: http.Header{api.HeaderAgent: {"a"}, api.HeaderWorkspace: {"w"}}})
					outW.Close()
					close(done)
				}()
				defer func() { inW.Close(); <-done }()
				tr = &mcp.IOTransport{Reader: outR, Writer: inW}
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "b", Version: "1"}, nil).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
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
