package mcpserver

import (
	"context"
	"encoding/json"
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
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/ops"
)

// A stream session is one MCP session on one connection: the bridge (parley
// mcp serve) opens a WebSocket on /mcp with the subprotocol
// api.StreamProtocol, and the connection then carries newline-delimited
// JSON-RPC both ways (as WebSocket text), served by the SDK's own IO
// transport. It saves an HTTP request, SSE framing and a
// session lookup per message, and it makes delivery exact: the bridge
// confirms what it wrote to its client (api.MethodDelivered), and when
// the connection ends, so does the session, and everything it did not
// confirm goes back to the inbox, marked redelivered. No guess from how a
// connection ended is needed.
//
// A bridge that asks (api.HeaderPush: `mcp serve --channel`) also gets
// the agent's messages pushed as they arrive, each handed to the session
// as a wait_for_message would (leased, recorded as the channel's wake-up)
// and written as a api.MethodMessage; it confirms each one as it
// confirms a result's deliveries. That saves the channel an HTTP request
// per message, and a confirmation per message written at once.

// serveStream serves a stream session on r's WebSocket until the connection
// or the daemon ends. The identity comes from r's headers, as
// for a session over HTTP (identityOf).
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request) {
	sess, err := s.identityOf(r)
	if err != nil {
		http.Error(w, err.Error(), api.HTTPStatus(hub.KindOf(err)))
		return
	}
	push := r.Header.Get(api.HeaderPush) != "" && sess.caller.Agent != ""
	if push {
		w.Header().Set(api.HeaderPush, "1") // on the 101
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{api.StreamProtocol},
		// Origin and Host are checked by the daemon for every endpoint.
		InsecureSkipVerify: true})
	if err != nil {
		return // Accept answered
	}
	if ws.Subprotocol() != api.StreamProtocol {
		ws.Close(websocket.StatusPolicyViolation, "a stream session speaks "+api.StreamProtocol)
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
		s: s, ctx: ctx, cancel: cancel, header: r.Header.Clone(), ready: make(chan struct{}), push: push, pusher: &pusher}
	ss, err := s.server(sess.caller.Profiles).Connect(ctx, t, nil)
	if err != nil {
		s.log.Warn("mcp stream: connect", "err", err)
		return
	}
	t.sess = sess
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
	sess   *session    // set before ready is closed
	ready  chan struct{}
	push   bool            // push the agent's messages once initialized
	pusher *sync.WaitGroup // the pusher's, once started
}

func (t *streamTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.IOTransport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &streamConn{Connection: c, t: t, keys: map[jsonrpc.ID]string{}}, nil
}

// streamConn gives each request what the handlers find on a request over
// HTTP (an inflight, through the private header), takes the bridge's
// confirmations, and ends the stream's context when the connection ends, so
// that blocked calls end with it.
type streamConn struct {
	mcp.Connection
	t *streamTransport

	mu   sync.Mutex
	keys map[jsonrpc.ID]string // inflight keys of the calls not answered yet
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
			key := strconv.FormatUint(t.s.nextReq.Add(1), 36)
			h := maps.Clone(t.header)
			h[headerRequest] = []string{key}
			req.Extra = &mcp.RequestExtra{Header: h}
			t.s.requests.Store(key, &inflight{ctx: t.ctx, id: requestID(req.ID.Raw())})
			c.mu.Lock()
			c.keys[req.ID] = key
			c.mu.Unlock()
		}
		return req, nil
	}
}

func (c *streamConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		key, ok := c.keys[resp.ID]
		delete(c.keys, resp.ID)
		c.mu.Unlock()
		if ok {
			c.t.s.requests.Delete(key)
			// The answer is written (the bridge confirms what it carried),
			// or the connection is gone (and the session with it).
			c.t.sess.caller.Reader.Written(ctx, requestID(resp.ID.Raw()), err, nil)
		}
	}
	return err
}

func (c *streamConn) Close() error {
	c.t.cancel(errGone)
	c.mu.Lock()
	for id, key := range c.keys {
		c.t.s.requests.Delete(key)
		delete(c.keys, id)
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
	c.t.sess.caller.Reader.Receipt(c.t.ctx, p.MessageIDs, true)
}

// pushMessages hands the agent's messages to the session as they arrive
// and writes each as a api.MethodMessage, until ctx (the stream's) ends.
// What it took and could not write stays leased to the session, which puts
// it back as it ends, with the connection.
func (c *streamConn) pushMessages(ctx context.Context) {
	s := c.t.s
	caller := c.t.sess.caller // a copy: its reads record the channel
	caller.Via = hub.WakeChannel
	rd := caller.Reader
	backoff := storeRetry
	for n := 0; ctx.Err() == nil; n++ {
		caller.Call = "push-" + strconv.Itoa(n)
		mi, err := s.ops.Receive(ctx, &caller, ops.Forever)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// The store cannot serve (PostgreSQL restarting): look again,
			// not too often.
			s.log.Warn("mcp stream: push messages", "agent", caller.Agent, "err", err)
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
		rd.Written(ctx, caller.Call, err, nil)
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
