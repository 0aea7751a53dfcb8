package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// Messages that a tool call hands to a session stay leased to the session's
// reader (hub.Reader) until the session is known to have them. The door only
// tells the reader what happened:
//
//   - A bridge (parley mcp serve) confirms, on its stream session, the ids
//     a result lists under _meta[api.MetaDelivered] once it has written that
//     result to its client (api.MethodDelivered).
//   - For other clients (hub.ConfirmOnNextRequest), the session's next
//     request confirms what its earlier responses carried, once they were
//     written whole, unless the connection a response went out on shows
//     that the client hung up without reading all of it (conns.go).
//
// A response that could not be written, or whose client hung up first,
// gives its messages back (Written with an error); so does a session's GET
// stream that closes while responses are unconfirmed (Lost: a killed
// bridge), the session's end (Close: DELETE, expiry) and a cancelled call
// (Cancel). Lease expiry in the hub backs all of this.

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

// capture keeps the first bytes of a request body as it is read, for its
// request id: a request that hands messages out is small.
type capture struct {
	io.ReadCloser
	mu     sync.Mutex
	buf    []byte
	over   bool   // longer than captureMax: too large to hand messages out
	parsed string // the id, once found: a request asks for it several times
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

// id is the request id of the captured JSON-RPC request body, or "".
func (c *capture) id() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.parsed != "" {
		return c.parsed
	}
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(c.buf, &m) != nil {
		return ""
	}
	c.parsed = requestID(m.ID)
	return c.parsed
}

// settle tells the session's reader how the answer of the call that handed
// messages out went, once its response is written whole or has failed: now
// if it is (whole), else, on a watched connection, at the write that ends
// it, after the handler returned. A client that reads on confirms it with
// its next request, unless the connection shows it did not read it.
func (s *Server) settle(r *http.Request, rd *hub.Reader, call string, writeErr error, whole bool, at uint64) {
	ctx := context.WithoutCancel(r.Context())
	wc := connOf(ctx)
	done := func(err error, at uint64) {
		// Only a failed write says the client did not get it. (Its
		// connection may close just after a write that reached it.)
		rd.Written(ctx, call, err, func() bool { return wc.received(at) })
	}
	if wc != nil && writeErr == nil && !whole {
		wc.afterWrite(done)
		return
	}
	done(writeErr, at)
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
	tr.Meta[api.MetaDelivered] = ids
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
