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
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-dev/parley/internal/api"
)

// streamable carries the session over Streamable HTTP: a POST per message
// from the client, the HTTP session (Mcp-Session-Id, MCP-Protocol-Version),
// the server-to-client GET stream, and a new session after the server lost
// the session or was restarted.
type streamable struct {
	b         *bridge
	transport *http.Transport
	client    *http.Client

	sess atomic.Pointer[session]

	mu        sync.Mutex
	getCancel context.CancelFunc

	// recoverMu serializes reconnects and re-initializations, so that many
	// requests failing at once cause one of each.
	recoverMu     sync.Mutex
	reconnErr     error
	reconnErrSess *session
	reconnErrAt   time.Time
}

// session is one HTTP session with the server. It is immutable; a new session
// replaces it atomically, and pointer identity tells requests whether the
// session they failed on is still the current one.
type session struct {
	id      string
	version string
	post    http.Header // shared by concurrent requests: never written after creation
	get     http.Header
}

func newStreamable(b *bridge) *streamable {
	h := &streamable{b: b}
	if sock := b.opts.SocketPath; sock != "" {
		var d net.Dialer
		h.transport = &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return d.DialContext(ctx, "unix", sock)
			},
			// Enough idle connections that many concurrent blocked calls plus the
			// GET stream never force a fresh dial on the hot path.
			MaxIdleConns:        64,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true, // a local socket gains nothing from gzip
		}
	} else {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = 64
		t.MaxIdleConnsPerHost = 64
		if b.opts.TLSConfig != nil {
			t.TLSClientConfig = b.opts.TLSConfig.Clone()
		}
		h.transport = t
	}
	// No Timeout: a tools/call may legitimately block for ten minutes.
	h.client = &http.Client{Transport: h.transport}
	h.sess.Store(h.newSession("", ""))
	return h
}

func (h *streamable) newSession(id, version string) *session {
	s := &session{id: id, version: version}
	s.post = h.b.base.Clone()
	s.post["Content-Type"] = []string{"application/json"}
	// This client confirms what it hands on (see api.MetaDelivered), so the
	// daemon need not take a later request for a confirmation.
	s.post[api.HeaderReceipts] = []string{"1"}
	s.post["Accept"] = []string{"application/json, text/event-stream"}
	s.get = h.b.base.Clone()
	s.get["Accept"] = []string{"text/event-stream"}
	for _, hd := range []http.Header{s.post, s.get} {
		if id != "" {
			hd[headerSessionID] = []string{id}
		}
		if version != "" {
			hd[headerProtocolVersion] = []string{version}
		}
	}
	return s
}

func (h *streamable) pushes() bool { return false }

// send POSTs m. Initialize, notifications and responses are sent before it
// returns; a request runs on its own, so that a call that blocks for
// minutes never holds up the others.
func (h *streamable) send(ctx context.Context, m *message) bool {
	b := h.b
	if len(m.ids) == 0 {
		h.call(ctx, m)
		if m.method == "notifications/initialized" {
			h.startGET(h.sess.Load())
		}
		return true
	}
	ctx, cancel := context.WithCancel(ctx)
	b.track(m, cancel, nil)
	run := func() {
		defer cancel()
		h.call(ctx, m)
		b.untrack(m)
	}
	if m.isInit {
		run()
	} else if !b.spawn(run) {
		cancel()
		b.untrack(m)
	}
	return true
}

// call sends m to the server and delivers what comes back, recovering the
// session once if it expired or the server had to be reconnected.
func (h *streamable) call(ctx context.Context, m *message) {
	b := h.b
	for attempt := 0; ; attempt++ {
		s := h.sess.Load()
		hs := s
		if m.isInit {
			// An initialize always starts a new session.
			hs = h.newSession("", "")
		}
		resp, err := h.do(ctx, http.MethodPost, m.raw, hs.post)
		if err != nil {
			if ctx.Err() != nil {
				return // cancelled by the client or by shutdown: nobody waits for an answer
			}
			if !isDialError(err) {
				// The server had the request and may have acted on it (a sent
				// message), so retrying is not safe: let the client decide. The
				// next request finds out whether the server is still there.
				b.log.Warn("connection lost", "method", m.method, "err", err)
				b.fail(m, codeInternalError, "parley: "+msgLost)
				return
			}
			if attempt == 0 && b.opts.Reconnect != nil {
				rerr := h.recover(s, true, !m.isInit)
				if rerr == nil {
					continue
				}
				b.log.Warn("reconnect failed", "err", rerr)
				err = fmt.Errorf("%w (%w)", err, rerr)
			}
			b.log.Warn("server unreachable", "method", m.method, "err", err)
			b.fail(m, codeInternalError, fmt.Sprintf("parley: server unreachable at %s: %v", b.target, err))
			return
		}
		if resp.StatusCode == http.StatusNotFound && s.id != "" && !m.isInit && attempt == 0 {
			drain(resp)
			b.log.Info("session expired; re-initializing", "session", s.id)
			if err := h.recover(s, false, true); err != nil {
				if ctx.Err() != nil {
					return
				}
				b.log.Warn("re-initialize failed", "err", err)
				b.fail(m, codeInternalError, fmt.Sprintf("parley: session expired and re-initializing it failed: %v", err))
				return
			}
			continue
		}
		if s := h.deliver(ctx, m, resp); s != nil {
			h.sess.Store(s)
		}
		return
	}
}

// do sends one HTTP request. Its errors are reasons the server could not be
// reached, without the method and URL that net/http adds.
func (h *streamable) do(ctx context.Context, method string, body []byte, hd http.Header) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.b.endpoint, r)
	if err != nil {
		return nil, fmt.Errorf("new request: %w", err)
	}
	req.Header = hd
	resp, err := h.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, err
	}
	return resp, nil
}

// deliver passes the messages of one POST response to the bridge, and
// answers m with an error if the response carries none for it. For an
// initialize the server accepted, it returns the new session.
func (h *streamable) deliver(ctx context.Context, m *message, resp *http.Response) *session {
	b := h.b
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		h.httpError(m, resp)
		return nil
	}
	if len(m.ids) == 0 {
		// Notifications and responses are answered with 202 and no body.
		drain(resp)
		return nil
	}
	var init *initCapture
	if m.isInit {
		init = &initCapture{sessionID: resp.Header.Get(headerSessionID), id: idKey(m.ids[0])}
	}
	ct := resp.Header.Get("Content-Type")
	switch {
	case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
		b.fail(m, codeInternalError, fmt.Sprintf("parley: server answered HTTP %d with no response to the request", resp.StatusCode))
		return nil
	case hasMediaType(ct, "text/event-stream"):
		lastID, retry, err := h.readEvents(resp.Body, init)
		for tries := 0; err == nil && b.waiting(m) && lastID != "" && tries < 3; tries++ {
			// The server ended the stream early on purpose (SEP-1699); resume it
			// after the delay it asked for.
			if !sleep(ctx, retry) {
				return nil
			}
			lastID, retry, err = h.resume(ctx, lastID, init)
		}
		if ctx.Err() == nil && b.waiting(m) {
			if err != nil {
				b.log.Warn("response stream broken", "method", m.method, "err", err)
			}
			b.fail(m, codeInternalError, "parley: "+msgLost)
			return nil
		}
	default:
		body, err := readBody(resp)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			b.log.Warn("response body broken", "method", m.method, "err", err)
			b.fail(m, codeInternalError, "parley: "+msgLost)
			return nil
		}
		body = bytes.TrimSpace(body)
		if len(body) == 0 {
			b.fail(m, codeInternalError, fmt.Sprintf("parley: server answered HTTP %d with an empty body", resp.StatusCode))
			return nil
		}
		if init != nil {
			init.observe(body)
		}
		b.receive(body, h)
		b.fail(m, codeInternalError, "parley: server sent a malformed response")
	}
	if init == nil || !init.ok {
		return nil
	}
	b.log.Debug("session established", "session", init.sessionID, "version", init.version)
	return h.newSession(init.sessionID, init.version)
}

// resume reopens a response stream the server closed before it was complete.
func (h *streamable) resume(ctx context.Context, lastID string, init *initCapture) (string, time.Duration, error) {
	hd := h.sess.Load().get.Clone()
	hd[headerLastEventID] = []string{lastID}
	resp, err := h.do(ctx, http.MethodGet, nil, hd)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		drain(resp)
		return "", 0, fmt.Errorf("resume stream: HTTP %d", resp.StatusCode)
	}
	return h.readEvents(resp.Body, init)
}

// initCapture picks the session out of the initialize exchange.
type initCapture struct {
	id        string
	sessionID string
	version   string
	ok        bool
}

func (c *initCapture) observe(msg []byte) {
	var r struct {
		ID     json.RawMessage `json:"id"`
		Result *struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if json.Unmarshal(msg, &r) == nil && r.Result != nil && idKey(r.ID) == c.id {
		c.version, c.ok = r.Result.ProtocolVersion, true
	}
}

// recover brings back the session that failed, unless another request already
// did: it calls Reconnect (if reconnect and set) and then, if reinit, replays the
// client's initialize.
func (h *streamable) recover(failed *session, reconnect, reinit bool) error {
	b := h.b
	h.recoverMu.Lock()
	defer h.recoverMu.Unlock()
	if h.sess.Load() != failed {
		return nil
	}
	if reconnect && b.opts.Reconnect != nil {
		// Many requests fail together when the server dies; let one attempt
		// answer all of them instead of restarting the server once per request.
		if h.reconnErrSess == failed && time.Since(h.reconnErrAt) < time.Second {
			return h.reconnErr
		}
		if err := b.opts.Reconnect(b.ctx); err != nil {
			h.reconnErr, h.reconnErrSess, h.reconnErrAt = fmt.Errorf("reconnect: %w", err), failed, time.Now()
			return h.reconnErr
		}
	}
	// Without a replay, a fresh pointer still tells the others that recovery
	// happened.
	var s *session
	initialized := false
	if reinit {
		err := b.replay(h, func(msg []byte) error {
			if s == nil {
				var err error
				s, err = h.replayInit(msg)
				return err
			}
			initialized = true
			return h.post(b.ctx, msg, s.post)
		})
		if err != nil {
			return err
		}
	}
	if s == nil {
		s = h.newSession(failed.id, failed.version)
	}
	h.sess.Store(s)
	if initialized {
		h.startGET(s)
	}
	return nil
}

// replayInit sends the client's initialize again, for a new session; the
// bridge swallows the answer.
func (h *streamable) replayInit(msg []byte) (*session, error) {
	resp, err := h.do(h.b.ctx, http.MethodPost, msg, h.newSession("", "").post)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, readErrBody(resp))
	}
	m, _, _ := parseMessage(msg) // the client's, parsed once already
	if s := h.deliver(h.b.ctx, m, resp); s != nil {
		return s, nil
	}
	return nil, errors.New("server did not accept the replayed initialize")
}

// post sends msg and reads the answer to a notification.
func (h *streamable) post(ctx context.Context, msg []byte, hd http.Header) error {
	resp, err := h.do(ctx, http.MethodPost, msg, hd)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, readErrBody(resp))
	}
	drain(resp)
	return nil
}

// readEvents passes every JSON-RPC message of an SSE stream to the bridge,
// in order, observing the answer to an initialize for init. It returns the
// last event id seen, the reconnection delay the server asked for, and nil at
// a clean end of stream or the read error.
func (h *streamable) readEvents(r io.Reader, init *initCapture) (string, time.Duration, error) {
	sr := newSSEReader(r)
	defer sr.release()
	for {
		data, err := sr.next()
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return sr.lastID, sr.retry, err
		}
		if init != nil {
			init.observe(data)
		}
		// Reading on to the end of the stream after the last response (which the
		// server sends right away) lets the connection go back to the pool.
		h.b.receive(data, h)
	}
}

// startGET opens the stream of server-initiated messages for s, replacing the
// one of an earlier session.
func (h *streamable) startGET(s *session) {
	ctx, cancel := context.WithCancel(h.b.ctx)
	h.mu.Lock()
	if h.getCancel != nil {
		h.getCancel()
	}
	h.getCancel = cancel
	h.mu.Unlock()
	if !h.b.spawn(func() { defer cancel(); h.getLoop(ctx, s) }) {
		cancel()
	}
}

// getLoop keeps the GET stream of session s open while s is current.
func (h *streamable) getLoop(ctx context.Context, s *session) {
	const minBackoff, maxBackoff = 50 * time.Millisecond, 5 * time.Second
	backoff := minBackoff
	var lastID string
	for ctx.Err() == nil && h.sess.Load() == s {
		hd := s.get
		if lastID != "" {
			hd = s.get.Clone()
			hd[headerLastEventID] = []string{lastID}
		}
		resp, err := h.do(ctx, http.MethodGet, nil, hd)
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			h.b.log.Debug("GET stream: server unreachable", "err", err)
			wait = backoff
		case resp.StatusCode == http.StatusMethodNotAllowed:
			drain(resp)
			h.b.log.Debug("GET stream not offered by the server")
			return
		case resp.StatusCode == http.StatusNotFound && s.id != "":
			drain(resp)
			// The server forgot the session (restart, expiry): make a new one now
			// rather than at the next request, so that server notifications keep
			// flowing to a client that is only listening.
			h.b.log.Info("GET stream: session expired; re-initializing", "session", s.id)
			if err := h.recover(s, false, true); err != nil {
				h.b.log.Warn("GET stream: re-initialize failed", "err", err)
				wait = backoff
				break
			}
			return
		case resp.StatusCode == http.StatusBadRequest && lastID != "":
			// Servers without an event store refuse Last-Event-ID; start afresh.
			drain(resp)
			lastID = ""
			continue
		case resp.StatusCode != http.StatusOK:
			h.b.log.Debug("GET stream refused", "status", resp.StatusCode, "body", readErrBody(resp))
			wait = backoff
		default:
			id, retry, err := h.readEvents(resp.Body, nil)
			resp.Body.Close()
			if id != "" {
				lastID = id
			}
			if ctx.Err() != nil {
				return
			}
			h.b.log.Debug("GET stream ended", "err", err)
			backoff, wait = minBackoff, minBackoff
			if retry > 0 {
				wait = retry
			}
		}
		if !sleep(ctx, wait) {
			return
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// close sends cancellations for the abandoned requests and DELETE for the
// session: a server may end the session only once its handlers return, and a
// wait can last minutes.
func (h *streamable) close(parent context.Context, abandoned []json.RawMessage) {
	defer h.transport.CloseIdleConnections()
	s := h.sess.Load()
	if s.id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), deleteTimeout)
	defer cancel()
	for _, id := range abandoned {
		msg := make([]byte, 0, 96+len(id))
		msg = append(msg, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`...)
		msg = append(msg, id...)
		msg = append(msg, `,"reason":"client disconnected"}}`...)
		h.post(ctx, msg, s.post)
	}
	hd := h.b.base.Clone()
	hd[headerSessionID] = []string{s.id}
	if s.version != "" {
		hd[headerProtocolVersion] = []string{s.version}
	}
	resp, err := h.do(ctx, http.MethodDelete, nil, hd)
	if err != nil {
		h.b.log.Debug("delete session", "err", err)
		return
	}
	drain(resp)
}

// httpError answers m after the server refused it with an HTTP error status.
func (h *streamable) httpError(m *message, resp *http.Response) {
	body := readErrBody(resp)
	h.b.log.Warn("server refused message", "method", m.method, "status", resp.StatusCode, "body", body)
	if len(m.ids) == 0 {
		return
	}
	// If the server explained itself with a JSON-RPC error, pass that on. Other
	// JSON error bodies (Parley's own {"error":{"kind","message"}}, e.g. a 401
	// from its TCP listener) have no code: passed on, they would not be a
	// valid JSON-RPC error and the client would wait for an answer forever.
	var rpc struct {
		Error json.RawMessage `json:"error"`
	}
	var rpcErr struct {
		Code *int64 `json:"code"`
	}
	if len(m.ids) == 1 && json.Unmarshal([]byte(body), &rpc) == nil && len(rpc.Error) > 0 && rpc.Error[0] == '{' &&
		json.Unmarshal(rpc.Error, &rpcErr) == nil && rpcErr.Code != nil {
		msg := make([]byte, 0, 64+len(rpc.Error))
		msg = append(msg, `{"jsonrpc":"2.0","id":`...)
		msg = append(msg, m.ids[0]...)
		msg = append(msg, `,"error":`...)
		msg = append(msg, rpc.Error...)
		msg = append(msg, '}')
		h.b.receive(msg, h)
		return
	}
	text := strings.TrimSpace(body)
	// The go-sdk refuses a method it does not know with a plain HTTP 400.
	if resp.StatusCode == http.StatusBadRequest && strings.HasPrefix(text, "JSON RPC not handled") {
		h.b.fail(m, codeMethodNotFound, fmt.Sprintf("method not found: %s", m.method))
		return
	}
	h.b.fail(m, codeInternalError, fmt.Sprintf("parley: server answered HTTP %d %s: %s", resp.StatusCode, http.StatusText(resp.StatusCode), truncate([]byte(text), errTextLimit)))
}

// confirm tells the server that the client has the messages with the ids: the
// response that carried them is written. It runs on the goroutine that wrote
// the response, so shutdown (which ends the session, putting back whatever is
// unconfirmed) waits for it, and it is not cut short by shutdown: the client
// has these messages. A confirmation that fails is only logged: the messages
// stay leased to the session and come back, marked as repeats, if it ends.
func (h *streamable) confirm(ids []string) {
	s := h.sess.Load()
	if s.id == "" {
		return
	}
	hd := s.post.Clone()
	hd[api.HeaderDelivered] = []string{strings.Join(ids, ",")}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(h.b.ctx), receiptTimeout)
	defer cancel()
	if err := h.post(ctx, receiptMsg(ids), hd); err != nil {
		h.b.log.Warn("confirm delivered messages", "err", err, "count", len(ids))
	}
}

// sleep waits for d and reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func readBody(resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n > 0 && n <= maxEvent {
		buf := make([]byte, n)
		_, err := io.ReadFull(resp.Body, buf)
		return buf, err
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxEvent))
}

// readErrBody reads the start of an error body and closes it.
func readErrBody(resp *http.Response) string {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, errBodyLimit))
	resp.Body.Close()
	return string(body)
}

// drain reads what is left of a small body and closes it, so that the
// connection can be reused.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, errBodyLimit))
	resp.Body.Close()
}

func hasMediaType(ct, want string) bool {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.EqualFold(strings.TrimSpace(ct), want)
}
