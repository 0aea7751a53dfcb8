package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// generic carries the session over Streamable HTTP with the go-sdk's own
// client transport (mcp.StreamableClientTransport), to any MCP server: the
// SDK keeps the HTTP session, reads SSE and JSON answers and resumes
// streams; this file moves messages between it and the bridge, and makes a
// new session when the server lost the old one.
//
// What the SDK does only for its own mcp.Client, through a method it does
// not export (clientConnection.sessionUpdated), is done here or not at all:
// the MCP-Protocol-Version header after initialize, which the transport's
// HTTP client adds (versioned); and the standalone GET stream, which is not
// opened. The spec makes it optional; without it the server reaches the
// client on the streams of its requests only (a tools/list_changed sent
// between requests is not carried). Protocol 2026-07-28 has no such stream.
type generic struct {
	b         *bridge
	rt        *http.Transport
	transport *mcp.StreamableClientTransport
	initKey   atomic.Pointer[string] // id key of the client's initialize
	version   atomic.Pointer[string] // the protocol version its answer named

	connMu  sync.Mutex // held while a new session is made
	mu      sync.Mutex
	conn    *genConn // nil until the first message, and once lost
	readers sync.WaitGroup
}

type genConn struct { // one SDK connection, and the HTTP session it carries
	g *generic
	c mcp.Connection
}

func newGeneric(b *bridge) *generic {
	rt := http.DefaultTransport.(*http.Transport).Clone()
	rt.MaxIdleConnsPerHost, rt.IdleConnTimeout = 64, 90*time.Second
	if b.opts.TLSConfig != nil {
		rt.TLSClientConfig = b.opts.TLSConfig.Clone()
	}
	if sock := b.opts.SocketPath; sock != "" {
		var d net.Dialer
		rt.Proxy = nil
		rt.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", sock) }
	}
	g := &generic{b: b, rt: rt}
	// No retries: a lost session is the bridge's to make again.
	g.transport = &mcp.StreamableClientTransport{Endpoint: b.endpoint, HTTPClient: &http.Client{Transport: versioned{rt, g}}, MaxRetries: -1}
	return g
}

// versioned adds the bridge's headers to every request, and the protocol
// version once negotiated. It makes the HTTP error of a request a JSON-RPC
// error for that request, quoting a body that is not one, which the SDK
// passes on: the client reads why ("HTTP 401 Unauthorized: missing or wrong
// bearer token"), not a bare status. A 404 for a session stays: the SDK
// takes it for a lost session, which the bridge makes again.
type versioned struct {
	base http.RoundTripper
	g    *generic
}

func (v versioned) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range v.g.b.base {
		r.Header[k] = vs
	}
	if pv := v.g.version.Load(); pv != nil && r.Header.Get("Mcp-Protocol-Version") == "" {
		r.Header.Set("Mcp-Protocol-Version", *pv)
	}
	resp, err := v.base.RoundTrip(r)
	if err != nil || resp.StatusCode < 400 || r.Method != http.MethodPost || r.GetBody == nil ||
		(resp.StatusCode == http.StatusNotFound && r.Header.Get("Mcp-Session-Id") != "") {
		return resp, err
	}
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if body, err := r.GetBody(); err != nil || json.NewDecoder(body).Decode(&req) != nil || !isID(req.ID) {
		return resp, nil // a notification's: nobody reads it
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, errBodyLimit))
	resp.Body.Close()
	body := string(b)
	var rpc struct {
		Error json.RawMessage `json:"error"`
	}
	var code struct {
		Code *int64 `json:"code"`
	}
	if json.Unmarshal([]byte(body), &rpc) != nil || json.Unmarshal(rpc.Error, &code) != nil || code.Code == nil {
		rpc.Error, _ = json.Marshal(map[string]any{"code": codeInternalError,
			"message": fmt.Sprintf("HTTP %d %s: %s", resp.StatusCode, http.StatusText(resp.StatusCode), truncate(bytes.TrimSpace([]byte(body)), errTextLimit))})
	}
	out := `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":` + string(rpc.Error) + `}`
	resp.Header.Set("Content-Type", "application/json")
	resp.Body, resp.ContentLength = io.NopCloser(strings.NewReader(out)), int64(len(out))
	return resp, nil
}

// send writes m on the session, making one if there is none (an initialize
// always makes a new one). A request is written on a goroutine of its own:
// the SDK's Write returns once the answer starts, and a call may block for
// minutes; but an initialize before the next line is read.
func (g *generic) send(ctx context.Context, m *message) bool {
	b := g.b
	msg, err := jsonrpc.DecodeMessage(m.raw)
	if err != nil {
		b.refuse(m, codeInvalidRequest, "invalid request: "+err.Error())
		return false
	}
	if m.isInit {
		g.mu.Lock()
		old := g.conn
		g.conn = nil
		g.mu.Unlock()
		if old != nil {
			old.c.Close()
		}
		key := idKey(m.id)
		g.initKey.Store(&key)
		g.version.Store(nil)
	}
	gc, err := g.connect(!m.isInit)
	if err != nil {
		b.refuse(m, codeInternalError, fmt.Sprintf("parley: server unreachable at %s: %v", b.target, err))
		return false
	}
	if m.id == nil {
		if err := gc.c.Write(ctx, msg); err != nil {
			b.log.Warn("server refused a message", "method", m.method, "err", err)
		}
		return true
	}
	// The SDK reads the answer's stream under this context after Write
	// returns; the bridge cancels it for the client (notifications/cancelled)
	// and at shutdown. Its parent has no Done: uncancelled, it holds nothing.
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	// Tracked on no connection while it is written: a connection lost
	// meanwhile (the server forgot the session) leaves it to this write.
	b.track(m, cancel, nil)
	run := func() {
		err := gc.c.Write(rctx, msg)
		if errors.Is(err, mcp.ErrSessionMissing) && !m.isInit {
			// The server forgot the session (it restarted, or let it
			// expire) without acting on m: a new one, and m again.
			g.lost(gc, err)
			if gc, err = g.connect(true); err == nil {
				err = gc.c.Write(rctx, msg)
			}
		}
		switch rpc := (*jsonrpc.Error)(nil); {
		case err == nil:
			if b.carried(m, gc); !g.current(gc) {
				b.fail(m, codeInternalError, "parley: "+msgLost) // lost before it was carried
			}
		case rctx.Err() != nil:
		case errors.As(err, &rpc) && rpc.Code != codeRejected:
			b.fail(m, int(rpc.Code), rpc.Message)
		case isDialError(err):
			b.log.Warn("server unreachable", "method", m.method, "err", err)
			b.fail(m, codeInternalError, fmt.Sprintf("parley: server unreachable at %s: %v", b.target, err))
		default: // it may have reached the server, which may have acted on it: only the client may retry
			b.log.Warn("connection lost", "method", m.method, "err", err)
			b.fail(m, codeInternalError, "parley: "+msgLost)
		}
	}
	if m.isInit {
		run()
	} else if !b.spawn(run) {
		cancel()
		b.untrack(m)
	}
	return true
}

const codeRejected = -32005 // the SDK's own "rejected by transport", not the server's

// connect returns the session's connection, making one if there is none;
// replay replays the client's initialization on a new one.
func (g *generic) connect(replay bool) (*genConn, error) {
	g.connMu.Lock()
	defer g.connMu.Unlock()
	g.mu.Lock()
	gc := g.conn
	g.mu.Unlock()
	if gc != nil {
		return gc, nil
	}
	c, err := g.transport.Connect(g.b.ctx)
	if err != nil {
		return nil, err
	}
	gc = &genConn{g: g, c: c}
	g.mu.Lock()
	g.conn = gc
	g.mu.Unlock()
	g.readers.Add(1)
	go gc.read()
	if replay {
		err := g.b.replay(gc, func(raw []byte) error {
			msg, err := jsonrpc.DecodeMessage(raw)
			if err == nil {
				err = gc.c.Write(g.b.ctx, msg)
			}
			return err
		})
		if err != nil {
			g.lost(gc, err)
			return nil, err
		}
	}
	return gc, nil
}

// read passes what the server sends on gc to the bridge until gc closes
// (not at b.ctx's end: at shutdown the abandoned requests are cancelled on
// it first).
func (gc *genConn) read() {
	g := gc.g
	defer g.readers.Done()
	for {
		msg, err := gc.c.Read(context.Background())
		if err != nil {
			g.lost(gc, err)
			return
		}
		data, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			continue
		}
		// The answer to the client's initialize names the version.
		if resp, ok := msg.(*jsonrpc.Response); ok && resp.Error == nil {
			id, _ := json.Marshal(resp.ID.Raw())
			var r struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if k := g.initKey.Load(); k != nil && idKey(id) == *k && json.Unmarshal(resp.Result, &r) == nil && r.ProtocolVersion != "" {
				g.version.Store(&r.ProtocolVersion)
			}
		}
		g.b.receive(data, gc)
	}
}

func (g *generic) current(gc *genConn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.conn == gc
}

// lost drops gc, answering the requests in flight on it with an error; the
// next message makes a new session.
func (g *generic) lost(gc *genConn, err error) {
	g.mu.Lock()
	current := g.conn == gc
	if current {
		g.conn = nil
	}
	g.mu.Unlock()
	if current {
		gc.c.Close()
		g.b.lost(gc, err)
	}
}

func (gc *genConn) confirm([]string) {} // over HTTP the next request confirms, by the daemon's rule

// close ends the session (the SDK sends DELETE), cancelling first the
// requests nobody waits for now, which the server would otherwise finish
// before it ends the session.
func (g *generic) close(ctx context.Context, abandoned []json.RawMessage) {
	g.mu.Lock()
	gc := g.conn
	g.conn = nil
	g.mu.Unlock()
	if gc != nil {
		for _, id := range abandoned {
			params, _ := json.Marshal(map[string]any{"requestId": id, "reason": "the client went away"})
			gc.c.Write(context.WithoutCancel(ctx), &jsonrpc.Request{Method: "notifications/cancelled", Params: params})
		}
		gc.c.Close()
	}
	g.readers.Wait()
	g.rt.CloseIdleConnections()
}
