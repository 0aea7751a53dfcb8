package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/bridge"
)

// Messages that a tool call hands to a session stay leased to the session
// (its id is the reader key) until the session is known to have them:
//
//   - A bridge (parley mcp serve) says so itself: it confirms the ids a
//     result lists under _meta[bridge.MetaDelivered] once it has written that
//     result to its client. Its requests carry headerReceipts.
//   - For other clients, the session's next request confirms what its earlier
//     responses carried, once they were written whole, unless the connection
//     a response went out on shows that the client hung up without reading
//     all of it (conns.go).
//
// They go back to the inbox, marked redelivered, when the response could not
// be written or its client hung up first, when the session's GET stream
// closes while responses are unconfirmed (a killed bridge), and when the
// session ends (DELETE, expiry). Lease expiry in the hub backs all of this.

// A client that cancels a request ignores its response (the MCP spec says
// so), and it may say so only after its next request: go-sdk's client sends
// notifications/cancelled from a goroutine and returns at once. So what a
// tool call handed out is remembered by its JSON-RPC request id, and a
// cancellation puts it back wherever it stands, leased or confirmed.

// headerReceipts marks the requests of a client that confirms deliveries
// itself (the bridge).
const headerReceipts = bridge.HeaderReceipts

// handed collects the ids of the messages handed out while serving one
// request; the handlers append, ServeHTTP reads once they returned.
type handed struct {
	mu  sync.Mutex
	ids []string
}

func (h *handed) add(ids []string) {
	h.mu.Lock()
	h.ids = append(h.ids, ids...)
	h.mu.Unlock()
}

// since returns the ids added after the first n.
func (h *handed) since(n int) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n >= len(h.ids) {
		return nil
	}
	return append([]string(nil), h.ids[n:]...)
}

func (h *handed) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ids)
}

func (h *handed) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := h.ids
	h.ids = nil
	return ids
}

// receipts tracks, per session, the responses that were written with
// deliveries in them but are not confirmed yet.
type receipts struct {
	mu      sync.Mutex
	written map[string][]written // by session id
}

// written is one response's deliveries and the connection it went out on.
type written struct {
	conn *watchedConn // nil: not watched
	at   uint64       // conn's mark before the response went out
	ids  []string
}

func (r *receipts) add(session string, w written) {
	r.mu.Lock()
	if r.written == nil {
		r.written = map[string][]written{}
	}
	r.written[session] = append(r.written[session], w)
	r.mu.Unlock()
}

// take removes and returns the session's written, unconfirmed responses.
func (r *receipts) take(session string) []written {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := r.written[session]
	delete(r.written, session)
	return ws
}

// forget removes ids the client confirmed itself.
func (r *receipts) forget(session string, ids []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var left []written
	for _, w := range r.written[session] {
		w.ids = slices.DeleteFunc(slices.Clone(w.ids), func(id string) bool { return slices.Contains(ids, id) })
		if len(w.ids) > 0 {
			left = append(left, w)
		}
	}
	if len(left) == 0 {
		delete(r.written, session)
	} else {
		r.written[session] = left
	}
}

// keepCalls is how many recent tool calls that handed messages out a session
// remembers for cancellation; a client cancels a call as it gives up on it.
const keepCalls = 16

// calls remembers, per session, what recent tool calls handed out, by
// request id, and the ids of calls cancelled before that was known.
type calls struct {
	mu sync.Mutex
	m  map[string][]call // by session id, oldest first
}

type call struct {
	id        string   // the JSON-RPC request id, as canonical JSON
	ids       []string // the messages it handed out
	cancelled bool
}

// handed records that the call with the request id handed out ids. It
// reports whether the call was cancelled already.
func (c *calls) handed(session, id string, ids []string) (cancelled bool) {
	if id == "" {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, k := range c.m[session] {
		if k.id == id && k.cancelled {
			c.m[session] = slices.Delete(c.m[session], i, i+1)
			return true
		}
	}
	c.push(session, call{id: id, ids: ids})
	return false
}

// cancel returns what the call with the request id handed out, or notes the
// cancellation for when that is known.
func (c *calls) cancel(session, id string) []string {
	if id == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, k := range c.m[session] {
		if k.id == id && !k.cancelled {
			c.m[session] = slices.Delete(c.m[session], i, i+1)
			return k.ids
		}
	}
	c.push(session, call{id: id, cancelled: true})
	return nil
}

func (c *calls) push(session string, k call) {
	if c.m == nil {
		c.m = map[string][]call{}
	}
	l := append(c.m[session], k)
	if len(l) > keepCalls {
		l = slices.Delete(l, 0, len(l)-keepCalls)
	}
	c.m[session] = l
}

func (c *calls) end(session string) {
	c.mu.Lock()
	delete(c.m, session)
	c.mu.Unlock()
}

// requestID is the canonical JSON of a JSON-RPC request id ("" if none), so
// that the id a request carried and the one a cancellation names compare
// equal.
func requestID(v any) string {
	if raw, ok := v.(json.RawMessage); ok {
		if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
			return ""
		}
	}
	if v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// bodyID is the request id of a captured JSON-RPC request body, or "".
func bodyID(body []byte) string {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	return requestID(m.ID)
}

// capture keeps the first bytes of a request body as it is read, for its
// request id: a request that hands messages out is small.
type capture struct {
	io.ReadCloser
	mu   sync.Mutex
	buf  []byte
	over bool // longer than captureMax: too large to hand messages out
}

const captureMax = 64 << 10

func (c *capture) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.mu.Lock()
	if c.over = c.over || len(c.buf)+n > captureMax; c.over {
		c.buf = nil
	} else {
		c.buf = append(c.buf, p[:n]...)
	}
	c.mu.Unlock()
	return n, err
}

func (c *capture) id() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bodyID(c.buf)
}

// cancelled puts back what the cancelled call handed out.
func (s *Server) cancelled(ctx context.Context, sess *session, id string) {
	ids := s.calls.cancel(sess.caller.Session, id)
	if len(ids) == 0 {
		return
	}
	s.receipts.forget(sess.caller.Session, ids)
	if _, err := s.hub.Reopen(context.WithoutCancel(ctx), sess.caller.Workspace, sess.caller.Agent, ids); err != nil {
		s.log.Warn("put back the messages of a cancelled call", "err", err)
	}
}

// confirmReceipt answers a bridge's confirmation (a POST with
// bridge.HeaderDelivered) without bothering the SDK.
func (s *Server) confirmReceipt(w http.ResponseWriter, r *http.Request) {
	session := r.Header.Get("Mcp-Session-Id")
	if session == "" {
		http.Error(w, "a confirmation needs the Mcp-Session-Id of the session that received the messages", http.StatusBadRequest)
		return
	}
	ids := strings.Split(r.Header.Get(bridge.HeaderDelivered), ",")
	s.receipts.forget(session, ids)
	s.hub.ConfirmLater(session, ids)
	w.WriteHeader(http.StatusAccepted)
}

// settle decides the fate of what one POST handed out, once its response is
// written whole or has failed: now if it is (whole), else, on a watched
// connection, at the write that ends it, after the handler returned.
func (s *Server) settle(r *http.Request, session string, ids []string, writeErr error, whole bool, at uint64) {
	ctx := context.WithoutCancel(r.Context())
	done := func(err error, at uint64) {
		// Only a failed write says the client did not get it. (Its
		// connection may close just after a write that reached it.)
		if err != nil {
			if _, err := s.hub.Release(ctx, session, ids); err != nil {
				s.log.Warn("put back undelivered messages", "err", err)
			}
			return
		}
		// Written: a bridge confirms it by itself, other clients by their
		// next request; until then a closing GET stream or the session's
		// end puts it back.
		s.receipts.add(session, written{conn: connOf(ctx), at: at, ids: ids})
	}
	if wc := connOf(ctx); wc != nil && writeErr == nil && !whole {
		wc.afterWrite(done)
		return
	}
	done(writeErr, at)
}

// confirmWritten settles what the session's earlier responses carried, now
// that it makes a new request: confirmed where the connection shows the
// client read the response (conns.go), put back where it shows it did not.
func (s *Server) confirmWritten(ctx context.Context, session string) {
	var got, lost []string
	for _, w := range s.receipts.take(session) {
		if w.conn.received(w.at) {
			got = append(got, w.ids...)
		} else {
			lost = append(lost, w.ids...)
		}
	}
	// The confirmation rides the session's next hand-out (often this
	// request's): the request does not wait for a write of its own.
	s.hub.ConfirmLater(session, got)
	if len(lost) > 0 {
		if _, err := s.hub.Release(context.WithoutCancel(ctx), session, lost); err != nil {
			s.log.Warn("put back unread messages", "err", err)
		}
	}
}

// releaseWritten puts back what the session's responses carried that it has
// not confirmed: its client is gone.
func (s *Server) releaseWritten(ctx context.Context, session string) {
	var ids []string
	for _, w := range s.receipts.take(session) {
		ids = append(ids, w.ids...)
	}
	if len(ids) == 0 {
		return
	}
	if _, err := s.hub.Release(context.WithoutCancel(ctx), session, ids); err != nil {
		s.log.Warn("put back unconfirmed messages", "err", err)
	}
}

// markDelivered lists the handed-out ids in a tool result's _meta, for a
// bridge to confirm.
func markDelivered(res mcp.Result, ids []string) {
	tr, ok := res.(*mcp.CallToolResult)
	if !ok || tr == nil || len(ids) == 0 {
		return
	}
	if tr.Meta == nil {
		tr.Meta = mcp.Meta{}
	}
	tr.Meta[bridge.MetaDelivered] = ids
}

// recorder remembers the first error writing a response (the SDK does not
// tell whether its client got the answer) and holds a response's answer so
// that nothing follows it on the wire (see hold).
type recorder struct {
	http.ResponseWriter
	held atomic.Bool

	mu      sync.Mutex
	started bool   // something went to net/http: its headers are set
	buf     []byte // the held answer of a response not started
	err     error
}

func (w *recorder) note(err error) {
	if err != nil {
		w.mu.Lock()
		if w.err == nil {
			w.err = err
		}
		w.mu.Unlock()
	}
}

func (w *recorder) WriteHeader(code int) {
	w.mu.Lock()
	w.started = true
	w.mu.Unlock()
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.held.Load() && !w.started {
		w.buf = append(w.buf, p...)
		w.mu.Unlock()
		return len(p), nil
	}
	w.started = true
	w.mu.Unlock()
	n, err := w.ResponseWriter.Write(p)
	w.note(err)
	return n, err
}

// Flush flushes, unless the response is held.
func (w *recorder) Flush() {
	if !w.held.Load() {
		w.note(http.NewResponseController(w.ResponseWriter).Flush())
	}
}

// hold keeps what is written from now on, the answer, from the wire until
// the handler returns (see finish). A client that closes the connection
// with bytes unread makes its kernel reset it, and one that has read its
// answer must not leave anything unread behind it.
func (w *recorder) hold() {
	if w != nil {
		w.held.Store(true)
	}
}

// finish writes a held answer once the SDK is done. A response not started
// before (no progress went out) goes whole, with its length and without the
// last chunk of a chunked one, and finish reports true. One that started
// chunked must end with that chunk: its answer stays in net/http's buffers
// to go out with it, in one write, as the handler returns.
func (w *recorder) finish() (whole bool) {
	w.mu.Lock()
	buf, started := w.buf, w.started
	w.buf, w.started = nil, true
	w.mu.Unlock()
	if buf == nil || started {
		return false
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
	_, err := w.ResponseWriter.Write(buf)
	w.note(err)
	w.note(http.NewResponseController(w.ResponseWriter).Flush())
	return true
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *recorder) error() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
