package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/ops"
)

// A stream session is one MCP session on one connection: the bridge
// (parley mcp serve) opens a WebSocket on /mcp with the subprotocol
// api.StreamProtocol, which then carries newline-delimited JSON-RPC both
// ways, served by the SDK's own IO transport. It saves an HTTP request,
// SSE framing and a session lookup per message, and makes delivery exact:
// the bridge confirms what it wrote to its client (api.MethodDelivered),
// and the session ends with the connection, giving back what it did not
// confirm. A session whose Hello asks (Push: `mcp serve --channel`) also
// gets the agent's messages pushed as they arrive, each handed to it as a
// wait would (leased, recorded as the channel's wake-up) and written as an
// api.MethodMessage, which the bridge confirms likewise.

// serveStream serves a stream session on r's WebSocket until the
// connection or the daemon ends. Its Hello comes with the upgrade.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request) {
	sess, err := s.openSession(r, ops.ConfirmByReceipt)
	if err != nil {
		http.Error(w, err.Error(), api.StatusOf(err))
		return
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{api.StreamProtocol},
		// Origin and Host are checked by the daemon for every endpoint.
		InsecureSkipVerify: true})
	if err == nil && ws.Subprotocol() != api.StreamProtocol {
		ws.Close(websocket.StatusPolicyViolation, "a stream session speaks "+api.StreamProtocol)
		err = errors.New("no subprotocol")
	}
	if err != nil { // Accept answered
		sess.Close(context.WithoutCancel(r.Context()))
		return
	}
	// r's context ends when the daemon shuts down; the stream's also when
	// the connection does. The pusher ends with it, before the connection
	// closes.
	ctx, cancel := context.WithCancelCause(r.Context())
	conn := websocket.NetConn(ctx, ws, websocket.MessageText)
	defer conn.Close()
	var pusher sync.WaitGroup
	defer pusher.Wait()
	defer cancel(nil)
	t := &streamTransport{IOTransport: mcp.IOTransport{Reader: conn, Writer: conn, MaxLineLength: maxRequestBytes},
		s: s, ctx: ctx, cancel: cancel, header: r.Header, sess: sess, ready: make(chan struct{}),
		push: sess.Hello().Push && sess.Caller().Agent != "", pusher: &pusher}
	ss, err := s.server(sess.Caller().Profiles).Connect(ctx, t, nil)
	if err != nil {
		s.log.Warn("mcp stream: connect", "err", err)
		sess.Close(context.WithoutCancel(ctx))
		return
	}
	s.open(ss, sess, false)
	close(t.ready)
	s.ended(ss, sess) // here: this goroutine would only wait otherwise
}

// streamTransport is the SDK's IO transport with what a stream session adds
// to it (streamConn).
type streamTransport struct {
	mcp.IOTransport
	s      *Server
	ctx    context.Context // the stream's
	cancel context.CancelCauseFunc
	header http.Header // of the upgrade request
	sess   *session
	ready  chan struct{}   // closed once the session is bound
	push   bool            // push the agent's messages once initialized
	pusher *sync.WaitGroup // the pusher's, once started
}

func (t *streamTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.IOTransport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &streamConn{Connection: c, t: t, calls: map[jsonrpc.ID]func(){}}, nil
}

// streamConn registers each call it reads for its handler (the shim,
// reqctx.go), with the stream's context and its JSON-RPC id, takes the
// bridge's confirmations, tells the reader what it wrote, and ends the
// stream's context when the connection ends, so that blocked calls end
// with it.
type streamConn struct {
	mcp.Connection
	t *streamTransport

	mu    sync.Mutex
	calls map[jsonrpc.ID]func() // the calls not answered yet: each unregisters its request
}

func (c *streamConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	t := c.t
	select {
	case <-t.ready: // the session is bound before its first message
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			t.cancel(errGone)
			return nil, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			return msg, nil
		}
		if req.Method == api.MethodDelivered {
			c.confirm(req.Params)
			continue
		}
		if req.Method == "notifications/initialized" && t.push {
			t.push = false // once: a second one is the SDK's to refuse
			t.pusher.Go(func() { c.pushMessages(t.ctx) })
		}
		if req.IsCall() {
			// Each call gets a header map of its own, under which its
			// handlers find its request.
			h := maps.Clone(t.header)
			req.Extra = &mcp.RequestExtra{Header: h}
			done := t.s.reqs.add(h, &request{ctx: t.ctx, call: requestID(req.ID.Raw())})
			c.mu.Lock()
			c.calls[req.ID] = done
			c.mu.Unlock()
		}
		return req, nil
	}
}

func (c *streamConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		done, ok := c.calls[resp.ID]
		delete(c.calls, resp.ID)
		c.mu.Unlock()
		if ok {
			done()
			// The answer is written (the bridge confirms what it carried),
			// or the connection is gone (and the session with it).
			c.t.sess.Reader().Written(ctx, requestID(resp.ID.Raw()), err)
		}
	}
	return err
}

func (c *streamConn) Close() error {
	c.t.cancel(errGone)
	c.mu.Lock()
	for id, done := range c.calls {
		done()
		delete(c.calls, id)
	}
	c.mu.Unlock()
	return c.Connection.Close()
}

// confirm settles what the bridge says its client has. It runs before the
// next message is read, so a session that ends after a confirmation never
// puts back what it confirmed.
func (c *streamConn) confirm(params json.RawMessage) {
	var p struct {
		MessageIDs []string `json:"messageIds"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.MessageIDs) == 0 {
		return
	}
	c.t.sess.Reader().Receipt(c.t.ctx, p.MessageIDs, true)
}

// pushMessages hands the agent's messages to the session as they arrive
// and writes each as a api.MethodMessage, until ctx (the stream's) ends.
// What it took and could not write stays leased to the session, which puts
// it back as it ends, with the connection.
func (c *streamConn) pushMessages(ctx context.Context) {
	s, sess := c.t.s, c.t.sess
	backoff := storeRetry
	for n := 0; ctx.Err() == nil; n++ {
		call := "push-" + strconv.Itoa(n)
		mi, err := sess.Push(ctx, call)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// The store cannot serve (PostgreSQL restarting): look again,
			// not too often.
			s.log.Warn("mcp stream: push messages", "agent", sess.Caller().Agent, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = storeRetry
		if mi == nil {
			continue
		}
		params, err := json.Marshal(pushed{Message: mi, Meta: map[string][]string{api.MetaDelivered: {mi.MessageID}}})
		if err == nil {
			err = c.Connection.Write(ctx, &jsonrpc.Request{Method: api.MethodMessage, Params: params})
		}
		// Written: the bridge confirms it. Not: it goes back.
		sess.Reader().Written(ctx, call, err)
		if err != nil {
			s.log.Warn("mcp stream: push messages", "err", err)
			return
		}
	}
}

// storeRetry is how soon a pusher that the store refused looks again.
const storeRetry = 100 * time.Millisecond

// pushed is the params of a api.MethodMessage.
type pushed struct {
	Message *api.MessageInfo    `json:"message"`
	Meta    map[string][]string `json:"_meta"`
}

// isStream reports whether r asks for a stream session: a WebSocket that
// offers api.StreamProtocol.
func isStream(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket") &&
		slices.ContainsFunc(strings.Split(r.Header.Get("Sec-WebSocket-Protocol"), ","), func(p string) bool {
			return strings.TrimSpace(p) == api.StreamProtocol
		})
}
