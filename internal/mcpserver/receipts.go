package mcpserver

import (
	"context"
	"net/http"
	"strings"
	"sync"

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
//     responses carried, once they were written whole.
//
// They go back to the inbox, marked redelivered, when the response could not
// be written or its client hung up first, when the session's GET stream
// closes while responses are unconfirmed (a killed bridge), and when the
// session ends (DELETE, expiry). Lease expiry in the hub backs all of this.

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

// receipts tracks, per session, the deliveries whose responses were written
// but are not confirmed yet.
type receipts struct {
	mu      sync.Mutex
	written map[string][]string // session id -> message ids
}

func (r *receipts) add(session string, ids []string) {
	r.mu.Lock()
	if r.written == nil {
		r.written = map[string][]string{}
	}
	r.written[session] = append(r.written[session], ids...)
	r.mu.Unlock()
}

// take removes and returns the session's written, unconfirmed ids.
func (r *receipts) take(session string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := r.written[session]
	delete(r.written, session)
	return ids
}

// forget removes ids the client confirmed itself.
func (r *receipts) forget(session string, ids []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	left := r.written[session][:0]
	for _, id := range r.written[session] {
		if !contains(ids, id) {
			left = append(left, id)
		}
	}
	if len(left) == 0 {
		delete(r.written, session)
	} else {
		r.written[session] = left
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
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
	if _, err := s.hub.Confirm(r.Context(), session, ids); err != nil {
		s.log.Warn("confirm delivered messages", "err", err)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// settle decides the fate of what one POST handed out, once its response is
// written or has failed.
func (s *Server) settle(r *http.Request, session string, ids []string, writeErr error) {
	ctx := context.WithoutCancel(r.Context())
	// Only a failed write says the client did not get it. (Its connection
	// may close just after a write that reached it: a client that has read
	// its answer may hang up before the stream formally ends.)
	if writeErr != nil {
		// The client never got the response: put the messages back now.
		if _, err := s.hub.Release(ctx, session, ids); err != nil {
			s.log.Warn("put back undelivered messages", "err", err)
		}
		return
	}
	// Written: a bridge confirms it by itself, other clients by their next
	// request; until then a closing GET stream or the session's end puts it back.
	s.receipts.add(session, ids)
}

// confirmWritten confirms what the session's earlier responses carried: it
// makes a new request, so it has them.
func (s *Server) confirmWritten(ctx context.Context, session string) {
	ids := s.receipts.take(session)
	if len(ids) == 0 {
		return
	}
	if _, err := s.hub.Confirm(context.WithoutCancel(ctx), session, ids); err != nil {
		s.log.Warn("confirm delivered messages", "err", err)
	}
}

// releaseWritten puts back what the session's responses carried that it has
// not confirmed: its client is gone.
func (s *Server) releaseWritten(ctx context.Context, session string) {
	ids := s.receipts.take(session)
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

// recorder remembers the first error writing a response: the SDK does not
// tell whether its client got the answer.
type recorder struct {
	http.ResponseWriter
	mu  sync.Mutex
	err error
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

func (w *recorder) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.note(err)
	return n, err
}

func (w *recorder) Flush() { w.note(http.NewResponseController(w.ResponseWriter).Flush()) }

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *recorder) error() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
