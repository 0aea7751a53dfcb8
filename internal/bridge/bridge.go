// Package bridge connects an MCP client that speaks stdio (newline-delimited
// JSON-RPC on stdin and stdout) to an MCP server that speaks Streamable HTTP,
// over a Unix socket or a URL; or, with Options.Stream, to a Parley daemon's
// stream session, where one connection carries the lines as they are
// (stream.go). What follows is about Streamable HTTP.
//
// It owns the transport only: framing, the HTTP session (Mcp-Session-Id,
// MCP-Protocol-Version), the server-to-client GET stream, re-initialization
// after the server lost the session or was restarted, and turning transport
// failures into JSON-RPC errors so that no request is left without an answer.
// It treats JSON-RPC payloads as opaque apart from their id and method, and one
// key of a result's _meta: the messages a Parley daemon handed out in it, which
// the bridge confirms once it has written the response to the client (see
// api.MetaDelivered).
//
// It is imported by internal/cli (`parley mcp serve` and `parley bridge`).
package bridge

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-dev/parley/internal/api"
)

// Options configures Run.
type Options struct {
	// Exactly one of SocketPath and URL. With SocketPath, requests go over the Unix
	// socket to http://parley/mcp; with URL, to URL.
	SocketPath string
	URL        string
	// Header is added to every HTTP request (identity headers, Authorization).
	Header http.Header
	// Logger receives the bridge's logs; nil means discard. The bridge never
	// logs to stdout, which belongs to the protocol.
	Logger *slog.Logger
	// Reconnect, if non-nil, is called when the server cannot be reached (connection
	// refused, socket missing, connection dropped mid-request). It may restart the
	// server; when it returns nil the bridge re-initializes its session (replaying the
	// client's original initialize and notifications/initialized, swallowing the
	// replayed response) and retries the failed request once.
	Reconnect func(ctx context.Context) error
	// Stream asks the server for the session as one connection (a Parley
	// daemon's stream session; stream.go) instead of an HTTP request per
	// message. A server that refuses is bridged over Streamable HTTP.
	Stream bool
	// Extension, if set, speaks what the server does not: `mcp serve
	// --channel` adds Claude Code's channel this way.
	Extension Extension
	// TLSConfig, for an https URL, replaces the system's defaults: a team
	// server whose certificate a private CA signed (`mcp serve --ca-file`).
	TLSConfig *tls.Config
}

// Extension adds to the protocol between the client and the server.
type Extension interface {
	// InitResult may rewrite the server's initialize response before the
	// client sees it (to declare capabilities).
	InitResult(msg []byte) []byte
	// Start runs once the client has sent notifications/initialized, until
	// ctx ends; write sends one message to the client.
	Start(ctx context.Context, write func(msg []byte) error)
	// Intercept sees every notification from the client; when it returns
	// true the notification is the extension's and the server never gets it.
	// ctx ends with the bridge; write sends one message to the client.
	Intercept(ctx context.Context, method string, raw []byte, write func(msg []byte) error) bool
}

// A Pusher is an Extension that takes the messages a Parley daemon pushes
// on a stream session instead of fetching them itself in Start: the bridge
// asks the daemon for them (api.HeaderPush), passes each api.MethodMessage to Push,
// writes what Push returns to the client, and then confirms the message on
// the connection that carried it, as it confirms a result's api.MetaDelivered.
// Over Streamable HTTP, or with a daemon that does not push, Start runs as
// for any Extension.
type Pusher interface {
	Extension
	// Push renders the params of an api.MethodMessage as a message for the
	// client; nil drops it unconfirmed (it goes back to the inbox, marked
	// redelivered, when the session ends).
	Push(params json.RawMessage) []byte
}

const (
	// maxLine bounds one stdin line; MCP payloads (file contents, images) can be
	// large, so this is far above the 16 MiB that clients may send.
	maxLine = 64 << 20
	// maxEvent bounds one SSE event from the server, for the same reason.
	maxEvent = 64 << 20
	// deleteTimeout bounds the DELETE sent on shutdown: the client is gone and
	// nobody waits for us.
	deleteTimeout = 2 * time.Second
	// errBodyLimit bounds how much of an HTTP error body is read and quoted.
	errBodyLimit = 4 << 10
	errTextLimit = 512

	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerLastEventID     = "Last-Event-Id"

	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInternalError  = -32603

	msgLost = "connection to the server was lost while the request was in flight; retry it"

	// receiptTimeout bounds a confirmation: one round trip on a local socket.
	receiptTimeout = 5 * time.Second
)

// Run copies JSON-RPC messages between in (newline-delimited, from the MCP client)
// and the server until in reaches EOF or ctx is cancelled. It writes every message
// for the client to out as one line.
//
// On return it has cancelled every request still in flight and sent DELETE for
// the session. If ctx is cancelled while a Read on in is blocked, the goroutine
// reading in exits only when that Read returns.
func Run(ctx context.Context, in io.Reader, out io.Writer, opts *Options) error {
	b, err := newBridge(opts, out)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	b.ctx = runCtx
	b.cancel = cancel

	handle, shutdown := b.handleLine, b.shutdown
	if opts.Stream {
		if st := b.openStream(); st != nil {
			handle, shutdown = st.handleLine, st.shutdown
		}
	}

	lines := make(chan line)
	readErr := make(chan error, 1)
	go readLines(runCtx, in, lines, readErr)

	var result error
loop:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				if err := <-readErr; err != nil {
					result = fmt.Errorf("read from client: %w", err)
				}
				break loop
			}
			handle(l)
		case <-runCtx.Done():
			break loop
		}
	}
	shutdown(ctx)
	if cause := context.Cause(runCtx); result == nil && cause != nil && ctx.Err() == nil && !errors.Is(cause, context.Canceled) {
		// The only cause set from inside is a failed write to the client.
		result = cause
	}
	return result
}

// bridge is the state of one Run.
type bridge struct {
	opts      *Options
	log       *slog.Logger
	endpoint  string
	target    string // where the server is, for error messages
	transport *http.Transport
	client    *http.Client
	base      http.Header // opts.Header, cloned once

	ctx    context.Context // cancelled on shutdown
	cancel context.CancelCauseFunc

	outMu   sync.Mutex
	out     *bufio.Writer
	outErr  error
	compact bytes.Buffer // scratch for compacting multi-line messages; guarded by outMu

	sess atomic.Pointer[session]

	mu             sync.Mutex
	closing        bool
	initMsg        []byte // the client's initialize, replayed on re-initialization
	initID         json.RawMessage
	initializedMsg []byte // the client's notifications/initialized
	getCancel      context.CancelFunc
	inflight       map[string]*inflightReq // by id key, for notifications/cancelled
	wg             sync.WaitGroup
	extOnce        sync.Once // starts Options.Extension

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

func newBridge(opts *Options, out io.Writer) (*bridge, error) {
	if opts == nil || (opts.SocketPath == "") == (opts.URL == "") {
		return nil, errors.New("bridge: exactly one of SocketPath and URL must be set")
	}
	b := &bridge{
		opts:     opts,
		log:      opts.Logger,
		out:      bufio.NewWriterSize(out, 64<<10),
		inflight: make(map[string]*inflightReq),
		base:     opts.Header.Clone(),
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.base == nil {
		b.base = http.Header{}
	}
	if opts.SocketPath != "" {
		b.endpoint = "http://parley/mcp"
		b.target = opts.SocketPath
		sock := opts.SocketPath
		var d net.Dialer
		b.transport = &http.Transport{
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
		u, err := url.Parse(opts.URL)
		if err != nil {
			return nil, fmt.Errorf("bridge: parse url: %w", err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return nil, fmt.Errorf("bridge: url %q: scheme must be http or https", opts.URL)
		}
		b.endpoint = opts.URL
		b.target = opts.URL
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = 64
		t.MaxIdleConnsPerHost = 64
		if opts.TLSConfig != nil {
			t.TLSClientConfig = opts.TLSConfig.Clone()
		}
		b.transport = t
	}
	// No Timeout: a tools/call may legitimately block for ten minutes.
	b.client = &http.Client{Transport: b.transport}
	b.sess.Store(b.newSession("", ""))
	return b, nil
}

func (b *bridge) newSession(id, version string) *session {
	s := &session{id: id, version: version}
	s.post = b.base.Clone()
	s.post["Content-Type"] = []string{"application/json"}
	// This client confirms what it hands on (see api.MetaDelivered), so the
	// daemon need not take a later request for a confirmation.
	s.post[api.HeaderReceipts] = []string{"1"}
	s.post["Accept"] = []string{"application/json, text/event-stream"}
	s.get = b.base.Clone()
	s.get["Accept"] = []string{"text/event-stream"}
	for _, h := range []http.Header{s.post, s.get} {
		if id != "" {
			h[headerSessionID] = []string{id}
		}
		if version != "" {
			h[headerProtocolVersion] = []string{version}
		}
	}
	return s
}

// spawn runs f in a goroutine that shutdown waits for, unless shutdown began.
func (b *bridge) spawn(f func()) bool {
	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		return false
	}
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		f()
	}()
	return true
}

// handleLine dispatches one line from the client. Initialize, notifications and
// responses are sent in order before the next line is read, because the server
// must see them in the order the client wrote them (initialize before
// notifications/initialized before anything else). Requests run concurrently so
// a call that blocks for minutes never holds up the others.
func (b *bridge) handleLine(l line) {
	m := b.parse(l)
	if m == nil {
		return
	}
	switch {
	case m.isInit:
		b.mu.Lock()
		b.initMsg, b.initID = m.raw, m.ids[0]
		b.mu.Unlock()
		b.call(b.ctx, m)
	case len(m.ids) == 0:
		if ext := b.opts.Extension; ext != nil && ext.Intercept(b.ctx, m.method, m.raw, b.writeOut) {
			return
		}
		if m.method == "notifications/initialized" {
			b.mu.Lock()
			b.initializedMsg = m.raw
			b.mu.Unlock()
		}
		b.call(b.ctx, m)
		if m.method == "notifications/initialized" {
			b.startGET(b.sess.Load())
			if ext := b.opts.Extension; ext != nil {
				b.extOnce.Do(func() { b.spawn(func() { ext.Start(b.ctx, b.writeOut) }) })
			}
		}
		if m.method == "notifications/cancelled" {
			b.cancelInflight(m.raw)
		}
	default:
		ctx, cancel := context.WithCancel(b.ctx)
		var key string
		var req *inflightReq
		if len(m.ids) == 1 && !m.batch {
			key, req = idKey(m.ids[0]), &inflightReq{id: m.ids[0], cancel: cancel}
			b.mu.Lock()
			b.inflight[key] = req
			b.mu.Unlock()
		}
		ok := b.spawn(func() {
			defer cancel()
			b.call(ctx, m)
			if req != nil {
				b.mu.Lock()
				// A later request may have reused the id; remove only our own entry.
				if b.inflight[key] == req {
					delete(b.inflight, key)
				}
				b.mu.Unlock()
			}
		})
		if !ok {
			cancel()
		}
	}
}

// parse classifies a line from the client, or answers it with an error and
// returns nil.
func (b *bridge) parse(l line) *message {
	if l.tooLong {
		b.writeError(nil, codeParseError, fmt.Sprintf("parse error: message longer than %d bytes", maxLine))
		return nil
	}
	m, code, err := parseMessage(l.data)
	if err != nil {
		// The line may hold a message's content: log its size, not its text.
		b.log.Warn("bad message from client", "err", err, "bytes", len(l.data))
		var id json.RawMessage
		if m != nil && len(m.ids) == 1 {
			id = m.ids[0]
		}
		b.writeError(id, code, err.Error())
		return nil
	}
	return m
}

// cancelInflight stops waiting for the request named by a notifications/cancelled
// the client sent: the server has been told, and the client expects no answer.
func (b *bridge) cancelInflight(raw []byte) {
	id := cancelledID(raw)
	if id == "" {
		return
	}
	b.mu.Lock()
	req := b.inflight[id]
	b.mu.Unlock()
	if req != nil {
		req.cancel()
	}
}

// cancelledID is the id key of the request a notifications/cancelled names.
func cancelledID(raw []byte) string {
	var n struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &n) != nil || len(n.Params.RequestID) == 0 {
		return ""
	}
	return idKey(n.Params.RequestID)
}

// inflightReq is a request awaiting its response.
type inflightReq struct {
	id     json.RawMessage
	cancel context.CancelFunc
}

// call sends m to the server and delivers what comes back, recovering the
// session once if it expired or the server had to be reconnected.
func (b *bridge) call(ctx context.Context, m *message) {
	for attempt := 0; ; attempt++ {
		s := b.sess.Load()
		hs := s
		if m.isInit {
			// An initialize always starts a new session.
			hs = b.newSession("", "")
		}
		resp, err := b.do(ctx, http.MethodPost, m.raw, hs.post)
		if err != nil {
			if ctx.Err() != nil {
				return // cancelled by the client or by shutdown: nobody waits for an answer
			}
			if !isDialError(err) {
				// The server had the request and may have acted on it (a sent
				// message), so retrying is not safe: let the client decide. The
				// next request finds out whether the server is still there.
				b.log.Warn("connection lost", "method", m.method, "err", err)
				b.fail(m, "parley: "+msgLost)
				return
			}
			if attempt == 0 && b.opts.Reconnect != nil {
				rerr := b.recover(s, true, !m.isInit)
				if rerr == nil {
					continue
				}
				b.log.Warn("reconnect failed", "err", rerr)
				err = fmt.Errorf("%w (%w)", err, rerr)
			}
			b.log.Warn("server unreachable", "method", m.method, "err", err)
			b.fail(m, fmt.Sprintf("parley: server unreachable at %s: %v", b.target, err))
			return
		}
		if resp.StatusCode == http.StatusNotFound && s.id != "" && !m.isInit && attempt == 0 {
			drain(resp)
			b.log.Info("session expired; re-initializing", "session", s.id)
			if err := b.recover(s, false, true); err != nil {
				if ctx.Err() != nil {
					return
				}
				b.log.Warn("re-initialize failed", "err", err)
				b.fail(m, fmt.Sprintf("parley: session expired and re-initializing it failed: %v", err))
				return
			}
			continue
		}
		b.deliver(ctx, m, resp)
		return
	}
}

// do sends one HTTP request. Its errors are reasons the server could not be
// reached, without the method and URL that net/http adds.
func (b *bridge) do(ctx context.Context, method string, body []byte, h http.Header) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.endpoint, r)
	if err != nil {
		return nil, fmt.Errorf("new request: %w", err)
	}
	req.Header = h
	resp, err := b.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, err
	}
	return resp, nil
}

// deliver writes the messages of one POST response to the client, and answers
// m with an error if the response carries none for it.
func (b *bridge) deliver(ctx context.Context, m *message, resp *http.Response) {
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b.httpError(m, resp)
		return
	}
	if len(m.ids) == 0 {
		// Notifications and responses are answered with 202 and no body.
		drain(resp)
		return
	}
	var init *initCapture
	if m.isInit {
		init = &initCapture{sessionID: resp.Header.Get(headerSessionID), id: idKey(m.ids[0])}
	}
	pending := newPending(m.ids)
	ct := resp.Header.Get("Content-Type")
	switch {
	case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
		b.fail(m, fmt.Sprintf("parley: server answered HTTP %d with no response to the request", resp.StatusCode))
		return
	case hasMediaType(ct, "text/event-stream"):
		lastID, retry, err := b.readEvents(resp.Body, pending, init, false)
		for tries := 0; err == nil && !pending.done() && lastID != "" && tries < 3; tries++ {
			// The server ended the stream early on purpose (SEP-1699); resume it
			// after the delay it asked for.
			if !sleep(ctx, retry) {
				return
			}
			lastID, retry, err = b.resume(ctx, lastID, pending, init)
		}
		if pending.done() || ctx.Err() != nil {
			break
		}
		if err != nil {
			b.log.Warn("response stream broken", "method", m.method, "err", err)
		}
		b.failPending(m, pending, "parley: "+msgLost)
		return
	default:
		body, err := readBody(resp)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			b.log.Warn("response body broken", "method", m.method, "err", err)
			b.fail(m, "parley: "+msgLost)
			return
		}
		body = bytes.TrimSpace(body)
		if len(body) == 0 {
			b.fail(m, fmt.Sprintf("parley: server answered HTTP %d with an empty body", resp.StatusCode))
			return
		}
		if init != nil {
			init.observe(body)
			body = b.initResult(body)
		}
		if err := b.writeMsg(body); err != nil {
			b.log.Warn("bad response from server", "err", err)
			b.fail(m, fmt.Sprintf("parley: server sent a malformed response: %v", err))
		}
	}
	if init != nil {
		b.establish(init)
	}
}

// initResult lets the extension rewrite the initialize response.
func (b *bridge) initResult(msg []byte) []byte {
	if ext := b.opts.Extension; ext != nil {
		return ext.InitResult(msg)
	}
	return msg
}

// resume reopens a response stream the server closed before it was complete.
func (b *bridge) resume(ctx context.Context, lastID string, p *pending, init *initCapture) (string, time.Duration, error) {
	h := b.sess.Load().get.Clone()
	h[headerLastEventID] = []string{lastID}
	resp, err := b.do(ctx, http.MethodGet, nil, h)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		drain(resp)
		return "", 0, fmt.Errorf("resume stream: HTTP %d", resp.StatusCode)
	}
	return b.readEvents(resp.Body, p, init, false)
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

// establish makes the session from a successful initialize current. The old
// session's GET stream ends on its own once it sees it is no longer current.
func (b *bridge) establish(c *initCapture) {
	if !c.ok {
		return
	}
	b.sess.Store(b.newSession(c.sessionID, c.version))
	b.log.Debug("session established", "session", c.sessionID, "version", c.version)
}

// recover brings back the session that failed, unless another request already
// did: it calls Reconnect (if reconnect and set) and then, if reinit, replays the
// client's initialize.
func (b *bridge) recover(failed *session, reconnect, reinit bool) error {
	b.recoverMu.Lock()
	defer b.recoverMu.Unlock()
	if b.sess.Load() != failed {
		return nil
	}
	if reconnect && b.opts.Reconnect != nil {
		// Many requests fail together when the server dies; let one attempt
		// answer all of them instead of restarting the server once per request.
		if b.reconnErrSess == failed && time.Since(b.reconnErrAt) < time.Second {
			return b.reconnErr
		}
		if err := b.opts.Reconnect(b.ctx); err != nil {
			b.reconnErr, b.reconnErrSess, b.reconnErrAt = fmt.Errorf("reconnect: %w", err), failed, time.Now()
			return b.reconnErr
		}
	}
	b.mu.Lock()
	initMsg, initID, initializedMsg := b.initMsg, b.initID, b.initializedMsg
	b.mu.Unlock()
	if !reinit || initMsg == nil {
		// Nothing to replay; a fresh pointer still tells the others that
		// recovery happened.
		b.sess.Store(b.newSession(failed.id, failed.version))
		return nil
	}
	return b.reinitialize(initMsg, initID, initializedMsg)
}

// reinitialize replays the client's initialize and notifications/initialized,
// swallowing the server's answer, which the client already had once.
func (b *bridge) reinitialize(initMsg []byte, initID json.RawMessage, initializedMsg []byte) error {
	fresh := b.newSession("", "")
	resp, err := b.do(b.ctx, http.MethodPost, initMsg, fresh.post)
	if err != nil {
		return fmt.Errorf("re-initialize: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("re-initialize: HTTP %d: %s", resp.StatusCode, readErrBody(resp))
	}
	init := &initCapture{sessionID: resp.Header.Get(headerSessionID), id: idKey(initID)}
	p := newPending([]json.RawMessage{initID})
	if hasMediaType(resp.Header.Get("Content-Type"), "text/event-stream") {
		if _, _, err := b.readEvents(resp.Body, p, init, true); err != nil && !p.done() {
			return fmt.Errorf("re-initialize: read response: %w", err)
		}
	} else {
		body, err := readBody(resp)
		if err != nil {
			return fmt.Errorf("re-initialize: read response: %w", err)
		}
		init.observe(bytes.TrimSpace(body))
	}
	if !init.ok {
		return errors.New("re-initialize: server did not accept the replayed initialize")
	}
	s := b.newSession(init.sessionID, init.version)
	if initializedMsg != nil {
		resp, err := b.do(b.ctx, http.MethodPost, initializedMsg, s.post)
		if err != nil {
			return fmt.Errorf("re-initialize: send initialized: %w", err)
		}
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("re-initialize: send initialized: HTTP %d: %s", resp.StatusCode, readErrBody(resp))
		}
		drain(resp)
	}
	b.sess.Store(s)
	b.log.Info("session re-initialized", "session", s.id)
	if initializedMsg != nil {
		b.startGET(s)
	}
	return nil
}

// pending tracks which request ids of one POST still await a response.
type pending struct {
	keys []string
	left int
}

func newPending(ids []json.RawMessage) *pending {
	p := &pending{keys: make([]string, len(ids)), left: len(ids)}
	for i, id := range ids {
		p.keys[i] = idKey(id)
	}
	return p
}

func (p *pending) see(id json.RawMessage) {
	if p == nil || len(id) == 0 || p.left == 0 {
		return
	}
	k := idKey(id)
	for i, want := range p.keys {
		if want == k {
			p.keys[i] = "\x00" // cannot be an id key
			p.left--
			return
		}
	}
}

func (p *pending) done() bool { return p != nil && p.left == 0 }

// readEvents forwards every JSON-RPC message of an SSE stream to the client, in
// order, marking responses in p. With swallow, the response to init is not
// forwarded. It returns the last event id seen, the reconnection delay the
// server asked for, and nil at a clean end of stream or the read error.
func (b *bridge) readEvents(r io.Reader, p *pending, init *initCapture, swallow bool) (string, time.Duration, error) {
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
		var env envelope
		if err := json.Unmarshal(data, &env); err != nil {
			// A batch of responses, or garbage: look at each element.
			var batch []envelope
			if json.Unmarshal(data, &batch) != nil {
				b.log.Warn("dropping malformed message from server", "err", err, "data", truncate(data, errTextLimit))
				continue
			}
			for _, e := range batch {
				if e.Method == "" {
					p.see(e.ID)
				}
			}
		} else if env.Method == "" {
			p.see(env.ID)
			if init != nil && idKey(env.ID) == init.id {
				init.observe(data)
				if swallow {
					continue
				}
				data = b.initResult(data)
			}
		}
		// Reading on to the end of the stream after the last response (which the
		// server sends right away) lets the connection go back to the pool.
		if err := b.writeMsg(data); err != nil {
			b.log.Warn("dropping message from server", "err", err)
		}
	}
}

// startGET opens the stream of server-initiated messages for s, replacing the
// one of an earlier session.
func (b *bridge) startGET(s *session) {
	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		return
	}
	if b.getCancel != nil {
		b.getCancel()
	}
	ctx, cancel := context.WithCancel(b.ctx)
	b.getCancel = cancel
	b.mu.Unlock()
	if !b.spawn(func() { defer cancel(); b.getLoop(ctx, s) }) {
		cancel()
	}
}

// getLoop keeps the GET stream of session s open while s is current.
func (b *bridge) getLoop(ctx context.Context, s *session) {
	const minBackoff, maxBackoff = 50 * time.Millisecond, 5 * time.Second
	backoff := minBackoff
	var lastID string
	for ctx.Err() == nil && b.sess.Load() == s {
		h := s.get
		if lastID != "" {
			h = s.get.Clone()
			h[headerLastEventID] = []string{lastID}
		}
		resp, err := b.do(ctx, http.MethodGet, nil, h)
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			b.log.Debug("GET stream: server unreachable", "err", err)
			wait = backoff
		case resp.StatusCode == http.StatusMethodNotAllowed:
			drain(resp)
			b.log.Debug("GET stream not offered by the server")
			return
		case resp.StatusCode == http.StatusNotFound && s.id != "":
			drain(resp)
			// The server forgot the session (restart, expiry): make a new one now
			// rather than at the next request, so that server notifications keep
			// flowing to a client that is only listening.
			b.log.Info("GET stream: session expired; re-initializing", "session", s.id)
			if err := b.recover(s, false, true); err != nil {
				b.log.Warn("GET stream: re-initialize failed", "err", err)
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
			b.log.Debug("GET stream refused", "status", resp.StatusCode, "body", readErrBody(resp))
			wait = backoff
		default:
			id, retry, err := b.readEvents(resp.Body, nil, nil, false)
			resp.Body.Close()
			if id != "" {
				lastID = id
			}
			if ctx.Err() != nil {
				return
			}
			b.log.Debug("GET stream ended", "err", err)
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

// shutdown ends the run: the client is gone, so in-flight requests are
// cancelled, and the server is told to drop the session.
func (b *bridge) shutdown(parent context.Context) {
	b.mu.Lock()
	b.closing = true
	var pending []json.RawMessage
	for _, r := range b.inflight {
		pending = append(pending, r.id)
	}
	b.mu.Unlock()
	b.cancel(nil)
	b.wg.Wait()
	defer b.transport.CloseIdleConnections()
	s := b.sess.Load()
	if s.id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), deleteTimeout)
	defer cancel()
	// Tell the server to stop working on the abandoned calls: a server may end
	// the session only once its handlers return, and a wait can last minutes.
	for _, id := range pending {
		msg := make([]byte, 0, 96+len(id))
		msg = append(msg, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`...)
		msg = append(msg, id...)
		msg = append(msg, `,"reason":"client disconnected"}}`...)
		if resp, err := b.do(ctx, http.MethodPost, msg, s.post); err == nil {
			drain(resp)
		}
	}
	h := b.base.Clone()
	h[headerSessionID] = []string{s.id}
	if s.version != "" {
		h[headerProtocolVersion] = []string{s.version}
	}
	resp, err := b.do(ctx, http.MethodDelete, nil, h)
	if err != nil {
		b.log.Debug("delete session", "err", err)
		return
	}
	drain(resp)
}

// httpError answers m after the server refused it with an HTTP error status.
func (b *bridge) httpError(m *message, resp *http.Response) {
	body := readErrBody(resp)
	b.log.Warn("server refused message", "method", m.method, "status", resp.StatusCode, "body", body)
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
		if b.writeMsg(msg) == nil {
			return
		}
	}
	text := strings.TrimSpace(body)
	// The go-sdk refuses a method it does not know with a plain HTTP 400.
	if resp.StatusCode == http.StatusBadRequest && strings.HasPrefix(text, "JSON RPC not handled") {
		for _, id := range m.ids {
			b.writeError(id, codeMethodNotFound, fmt.Sprintf("method not found: %s", m.method))
		}
		return
	}
	b.fail(m, fmt.Sprintf("parley: server answered HTTP %d %s: %s", resp.StatusCode, http.StatusText(resp.StatusCode), truncate([]byte(text), errTextLimit)))
}

// fail answers every request in m with an internal error.
func (b *bridge) fail(m *message, text string) {
	for _, id := range m.ids {
		b.writeError(id, codeInternalError, text)
	}
}

// failPending answers the requests in m that got no response.
func (b *bridge) failPending(m *message, p *pending, text string) {
	for i, id := range m.ids {
		if p.keys[i] != "\x00" {
			b.writeError(id, codeInternalError, text)
		}
	}
}

// writeError writes a JSON-RPC error response; a nil id is written as null.
func (b *bridge) writeError(id json.RawMessage, code int, text string) {
	quoted, _ := json.Marshal(text)
	msg := make([]byte, 0, 64+len(id)+len(quoted))
	msg = append(msg, `{"jsonrpc":"2.0","id":`...)
	if len(id) == 0 {
		msg = append(msg, "null"...)
	} else {
		msg = append(msg, id...)
	}
	msg = append(msg, `,"error":{"code":`...)
	msg = strconv.AppendInt(msg, int64(code), 10)
	msg = append(msg, `,"message":`...)
	msg = append(msg, quoted...)
	msg = append(msg, "}}"...)
	if err := b.writeMsg(msg); err != nil {
		b.log.Warn("write error response", "err", err)
	}
}

// writeMsg writes one message to the client as one line. Writers share one
// lock, so lines never interleave; the flush after each message is what wakes
// a client blocked on its stdin.
func (b *bridge) writeMsg(msg []byte) error {
	if err := b.writeOut(msg); err != nil {
		return err
	}
	if ids := deliveredIDs(msg); len(ids) > 0 {
		b.confirm(ids)
	}
	return nil
}

// deliveredIDs returns the message ids a response lists under
// api.MetaDelivered.
func deliveredIDs(msg []byte) []string {
	if !bytes.Contains(msg, []byte(`"`+api.MetaDelivered+`"`)) {
		return nil
	}
	var r struct {
		Result delivered `json:"result"`
	}
	if json.Unmarshal(msg, &r) != nil {
		return nil
	}
	return r.Result.ids()
}

// delivered is where a result or a pushed message lists, in its _meta, the
// message ids it hands out (api.MetaDelivered).
type delivered struct {
	Meta map[string]json.RawMessage `json:"_meta"`
}

func (d delivered) ids() []string {
	var ids []string
	json.Unmarshal(d.Meta[api.MetaDelivered], &ids)
	return ids
}

// confirm tells the server that the client has the messages with the ids: the
// response that carried them is written. It runs on the goroutine that wrote
// the response, so shutdown (which ends the session, putting back whatever is
// unconfirmed) waits for it, and it is not cut short by shutdown: the client
// has these messages. A confirmation that fails is only logged: the messages
// stay leased to the session and come back, marked as repeats, if it ends.
func (b *bridge) confirm(ids []string) {
	s := b.sess.Load()
	if s.id == "" {
		return
	}
	h := s.post.Clone()
	h[api.HeaderDelivered] = []string{strings.Join(ids, ",")}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), receiptTimeout)
	defer cancel()
	resp, err := b.do(ctx, http.MethodPost, receiptMsg(ids), h)
	if err != nil {
		b.log.Warn("confirm delivered messages", "err", err, "count", len(ids))
		return
	}
	drain(resp)
	if resp.StatusCode/100 != 2 {
		b.log.Warn("confirm delivered messages", "status", resp.StatusCode, "count", len(ids))
	}
}

// receiptMsg is the api.MethodDelivered notification that confirms the
// messages with the ids.
func receiptMsg(ids []string) []byte {
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": api.MethodDelivered,
		"params": map[string]any{"messageIds": ids}})
	return msg
}

// writeOut writes one message to the client as one line and flushes it.
func (b *bridge) writeOut(msg []byte) error {
	msg = bytes.TrimSpace(msg)
	b.outMu.Lock()
	defer b.outMu.Unlock()
	if b.outErr != nil {
		return b.outErr
	}
	if bytes.IndexByte(msg, '\n') >= 0 || bytes.IndexByte(msg, '\r') >= 0 {
		// Pretty-printed by the server (or multi-line SSE data): a stdio client
		// reads one line per message.
		b.compact.Reset()
		if err := json.Compact(&b.compact, msg); err != nil {
			return fmt.Errorf("compact message: %w", err)
		}
		msg = b.compact.Bytes()
	}
	b.out.Write(msg)
	b.out.WriteByte('\n')
	if err := b.out.Flush(); err != nil {
		b.outErr = fmt.Errorf("write to client: %w", err)
		b.cancel(b.outErr)
		return b.outErr
	}
	return nil
}

// isDialError reports whether err means no connection to the server could be
// made, so the request cannot have reached it.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
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

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
