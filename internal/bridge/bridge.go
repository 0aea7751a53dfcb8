// Package bridge connects an MCP client that speaks stdio (newline-delimited
// JSON-RPC on stdin and stdout) to an MCP server that speaks Streamable HTTP,
// over a Unix socket or a URL (streamable.go); or, with Options.Stream, to a
// Parley daemon's stream session, where one connection carries the lines as
// they are (stream.go).
//
// The client's side is written once, whatever carries the session (this
// file): reading the client's lines, remembering its initialize and
// notifications/initialized to replay them on a new session (swallowing the
// replayed answer), the table of requests in flight (answered with an error
// when the session is lost, so that no request is left without an answer),
// notifications/cancelled, starting the Extension, writing to the client,
// and confirming what a response handed out once it is written: one key of a
// result's _meta lists the messages a Parley daemon handed out in it, which
// the bridge confirms (see api.MetaDelivered). A transport only moves
// messages: it sends what the client wrote, passes what the server sends to
// receive, makes a new session when it lost one, and confirms on the session
// that carried a message. It treats JSON-RPC payloads as opaque apart from
// their id and method.
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
	"sync"
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
// On return it has cancelled every request still in flight and ended the
// session. If ctx is cancelled while a Read on in is blocked, the goroutine
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
	if opts.Stream {
		if st := b.openStream(); st != nil {
			b.t = st
		}
	}
	if b.t == nil {
		b.t = newStreamable(b)
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
			b.handleLine(l)
		case <-runCtx.Done():
			break loop
		}
	}
	b.shutdown(ctx)
	if cause := context.Cause(runCtx); result == nil && cause != nil && ctx.Err() == nil && !errors.Is(cause, context.Canceled) {
		// The only cause set from inside is a failed write to the client.
		result = cause
	}
	return result
}

// A transport carries the session between the bridge and the server; it
// moves messages, and the bridge does the rest.
type transport interface {
	// send passes m from the client to the server, in the order the client
	// wrote it, tracking its requests (bridge.track). What the server sends
	// back goes to bridge.receive. A request that cannot be sent, or that the
	// server leaves unanswered, the transport answers with an error
	// (bridge.fail, bridge.lost). When the server lost the session, the
	// transport makes a new one and calls bridge.replay on it. False means
	// the server did not get m.
	send(ctx context.Context, m *message) bool
	// pushes reports whether the server pushes the agent's messages (Pusher).
	pushes() bool
	// close ends the session once nothing else uses it; abandoned are the
	// requests still in flight, which nobody waits for now.
	close(ctx context.Context, abandoned []json.RawMessage)
}

// A carrier is the session (or connection) a message from the server came
// on: the messages it handed out are confirmed on it.
type carrier interface {
	confirm(ids []string)
}

// bridge is the client's side of one Run.
type bridge struct {
	opts     *Options
	log      *slog.Logger
	endpoint string
	target   string      // where the server is, for error messages
	base     http.Header // opts.Header, cloned once
	t        transport

	ctx    context.Context // cancelled on shutdown
	cancel context.CancelCauseFunc

	outMu   sync.Mutex
	out     *bufio.Writer
	outErr  error
	compact bytes.Buffer // scratch for compacting multi-line messages; guarded by outMu

	mu             sync.Mutex
	closing        bool
	inflight       map[string]*flight // by id key
	initMsg        []byte             // the client's initialize, replayed on a new session
	initID         json.RawMessage
	initializedMsg []byte // the client's notifications/initialized
	rewrite        string // id key of the client's initialize until it is answered: the extension may rewrite the answer
	replaying      *replay
	wg             sync.WaitGroup
	extOnce        sync.Once // starts Options.Extension
}

// flight is a request awaiting its answer.
type flight struct {
	id     json.RawMessage
	m      *message
	cancel context.CancelFunc // stops the transport waiting for the answer, if it waits
	via    carrier            // what it was sent on, if the transport loses sessions as a whole
}

// reply is the part of a message from the server that the bridge reads:
// enough to match an answer to its request. A result is skipped, not copied.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Error  json.RawMessage `json:"error"`
}

// replay is a replayed initialize awaiting its answer, which the client
// already had once.
type replay struct {
	key  string
	via  carrier
	done chan error
}

func newBridge(opts *Options, out io.Writer) (*bridge, error) {
	if opts == nil || (opts.SocketPath == "") == (opts.URL == "") {
		return nil, errors.New("bridge: exactly one of SocketPath and URL must be set")
	}
	b := &bridge{
		opts:     opts,
		log:      opts.Logger,
		out:      bufio.NewWriterSize(out, 64<<10),
		inflight: make(map[string]*flight),
		base:     opts.Header.Clone(),
		endpoint: "http://parley/mcp",
		target:   opts.SocketPath,
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.base == nil {
		b.base = http.Header{}
	}
	if opts.URL != "" {
		u, err := url.Parse(opts.URL)
		if err != nil {
			return nil, fmt.Errorf("bridge: parse url: %w", err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return nil, fmt.Errorf("bridge: url %q: scheme must be http or https", opts.URL)
		}
		b.endpoint, b.target = opts.URL, opts.URL
	}
	return b, nil
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

// handleLine passes one line from the client to the transport, which sends
// it before the next line is read: the server must see messages in the
// order the client wrote them (initialize before notifications/initialized
// before anything else).
func (b *bridge) handleLine(l line) {
	m := b.parse(l)
	if m == nil {
		return
	}
	if ext := b.opts.Extension; len(m.ids) == 0 && ext != nil && ext.Intercept(b.ctx, m.method, m.raw, b.writeOut) {
		return
	}
	if m.isInit {
		// A second initialize replaces the first; it is not replayed before
		// itself.
		b.mu.Lock()
		b.initMsg, b.initializedMsg, b.rewrite = nil, nil, idKey(m.ids[0])
		b.mu.Unlock()
	}
	if !b.t.send(b.ctx, m) {
		if m.isInit {
			b.mu.Lock()
			b.rewrite = ""
			b.mu.Unlock()
		}
		return
	}
	switch {
	case m.isInit:
		b.mu.Lock()
		b.initMsg, b.initID = m.raw, m.ids[0]
		b.mu.Unlock()
	case m.method == "notifications/initialized":
		b.mu.Lock()
		b.initializedMsg = m.raw
		b.mu.Unlock()
		b.startExtension()
	case m.method == "notifications/cancelled":
		b.cancelled(m.raw)
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

// startExtension starts the extension once the client has initialized,
// unless the server pushes what it would fetch.
func (b *bridge) startExtension() {
	ext := b.opts.Extension
	b.mu.Lock()
	initialized := b.initializedMsg != nil
	b.mu.Unlock()
	if ext == nil || !initialized {
		return
	}
	if _, ok := ext.(Pusher); ok && b.t.pushes() {
		return
	}
	b.extOnce.Do(func() { b.spawn(func() { ext.Start(b.ctx, b.writeOut) }) })
}

// track adds the requests in m to the table of requests in flight.
func (b *bridge) track(m *message, cancel context.CancelFunc, via carrier) {
	if len(m.ids) == 0 {
		return
	}
	b.mu.Lock()
	for _, id := range m.ids {
		b.inflight[idKey(id)] = &flight{id: id, m: m, cancel: cancel, via: via}
	}
	b.mu.Unlock()
}

// untrack removes the requests in m that are still in flight, unanswered.
func (b *bridge) untrack(m *message) {
	b.fail(m, 0, "")
}

// waiting reports whether a request in m awaits its answer.
func (b *bridge) waiting(m *message) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range m.ids {
		if f := b.inflight[idKey(id)]; f != nil && f.m == m {
			return true
		}
	}
	return false
}

// fail answers every request in m still in flight with an error (with code
// 0, removes them unanswered).
func (b *bridge) fail(m *message, code int, text string) {
	if len(m.ids) == 0 {
		return
	}
	var ids []json.RawMessage
	b.mu.Lock()
	for _, id := range m.ids {
		// A later request may have reused the id: only m's own entry goes.
		if k := idKey(id); b.inflight[k] != nil && b.inflight[k].m == m {
			delete(b.inflight, k)
			ids = append(ids, id)
			if k == b.rewrite {
				b.rewrite = ""
			}
		}
	}
	b.mu.Unlock()
	if code != 0 {
		for _, id := range ids {
			b.writeError(id, code, text)
		}
	}
}

// lost answers the requests in flight on via with an error, now that the
// server lost them with the session or connection: the server may have
// acted on them, so only the client may retry.
func (b *bridge) lost(via carrier, err error) {
	var ids []json.RawMessage
	b.mu.Lock()
	for k, f := range b.inflight {
		if f.via == via {
			delete(b.inflight, k)
			ids = append(ids, f.id)
		}
	}
	if r := b.replaying; r != nil && r.via == via {
		b.replaying = nil
		r.done <- err
	}
	closing := b.closing
	b.mu.Unlock()
	if closing {
		return
	}
	b.log.Warn("connection to the server lost", "err", err, "in_flight", len(ids))
	for _, id := range ids {
		b.writeError(id, codeInternalError, "parley: "+msgLost)
	}
}

// cancelled stops waiting for the request named by a notifications/cancelled
// the client sent: the server has been told, and the client expects no
// answer.
func (b *bridge) cancelled(raw []byte) {
	var n struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &n) != nil || len(n.Params.RequestID) == 0 {
		return
	}
	k := idKey(n.Params.RequestID)
	b.mu.Lock()
	f := b.inflight[k]
	delete(b.inflight, k)
	b.mu.Unlock()
	if f != nil && f.cancel != nil && !f.m.batch {
		f.cancel() // a batch goes on for its other requests
	}
}

// replay sends the client's initialize again on a new session (write sends
// one message on it, and the answers come via via), swallows the answer,
// which the client already had once, and then sends
// notifications/initialized.
func (b *bridge) replay(via carrier, write func(msg []byte) error) error {
	done := make(chan error, 1)
	b.mu.Lock()
	initMsg, initializedMsg := b.initMsg, b.initializedMsg
	if initMsg != nil {
		b.replaying = &replay{key: idKey(b.initID), via: via, done: done}
	}
	b.mu.Unlock()
	if initMsg == nil {
		return nil
	}
	defer func() {
		b.mu.Lock()
		if b.replaying != nil && b.replaying.done == done {
			b.replaying = nil
		}
		b.mu.Unlock()
	}()
	err := write(initMsg)
	if err == nil {
		// The server must have answered initialize before it takes
		// notifications/initialized.
		t := time.NewTimer(dialTimeout)
		select {
		case err = <-done:
		case <-t.C:
			err = errors.New("no answer")
		}
		t.Stop()
	}
	if err == nil && initializedMsg != nil {
		err = write(initializedMsg)
	}
	if err != nil {
		return fmt.Errorf("re-initialize: %w", err)
	}
	b.log.Info("session re-initialized")
	return nil
}

// receive passes one message from the server on to the client: an answer
// settles its request, the answer to a replayed initialize is swallowed,
// and the messages a result or a push handed out are confirmed via the
// carrier once written.
func (b *bridge) receive(msg []byte, via carrier) {
	var env reply
	if err := json.Unmarshal(msg, &env); err != nil {
		// A batch of responses, or garbage: look at each element.
		var batch []reply
		if json.Unmarshal(msg, &batch) != nil {
			b.log.Warn("dropping malformed message from server", "err", err, "data", truncate(msg, errTextLimit))
			return
		}
		b.mu.Lock()
		for _, e := range batch {
			if k := idKey(e.ID); e.Method == "" && b.inflight[k] != nil {
				delete(b.inflight, k)
			}
		}
		b.mu.Unlock()
	} else if env.Method == "" {
		k := idKey(env.ID)
		b.mu.Lock()
		delete(b.inflight, k)
		r := b.replaying
		swallow := r != nil && r.key == k && r.via == via
		rewrite := !swallow && k == b.rewrite
		if swallow {
			b.replaying = nil
		} else if rewrite {
			b.rewrite = ""
		}
		b.mu.Unlock()
		if swallow {
			if len(env.Error) > 0 {
				r.done <- fmt.Errorf("the server refused it: %s", truncate(env.Error, errTextLimit))
			} else {
				r.done <- nil
			}
			return
		}
		if rewrite && b.opts.Extension != nil {
			msg = b.opts.Extension.InitResult(msg)
		}
	} else if env.Method == api.MethodMessage {
		b.push(msg, via)
		return
	}
	if err := b.writeOut(msg); err != nil {
		b.log.Warn("dropping message from server", "err", err)
		return // the client is gone: the run ends, and so does the session
	}
	if ids := deliveredIDs(msg); len(ids) > 0 {
		via.confirm(ids)
	}
}

// push passes a message the daemon pushed to the extension, writes what it
// renders to the client, and confirms it.
func (b *bridge) push(msg []byte, via carrier) {
	p, ok := b.opts.Extension.(Pusher)
	var n struct {
		Params json.RawMessage `json:"params"`
	}
	if !ok || json.Unmarshal(msg, &n) != nil {
		b.log.Warn("dropping a pushed message", "bytes", len(msg))
		return
	}
	var meta delivered
	json.Unmarshal(n.Params, &meta)
	out := p.Push(n.Params)
	if out == nil {
		return
	}
	if b.writeOut(out) != nil {
		return // the client is gone: the session ends, and puts it back
	}
	if ids := meta.ids(); len(ids) > 0 {
		via.confirm(ids)
	}
}

// shutdown ends the run: the client is gone, so the requests in flight are
// abandoned, and the transport ends the session once nothing else runs.
func (b *bridge) shutdown(ctx context.Context) {
	b.mu.Lock()
	b.closing = true
	var abandoned []json.RawMessage
	for _, f := range b.inflight {
		abandoned = append(abandoned, f.id)
	}
	b.mu.Unlock()
	b.cancel(nil)
	b.wg.Wait()
	b.t.close(ctx, abandoned)
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
	if err := b.writeOut(msg); err != nil {
		b.log.Warn("write error response", "err", err)
	}
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

// receiptMsg is the api.MethodDelivered notification that confirms the
// messages with the ids.
func receiptMsg(ids []string) []byte {
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": api.MethodDelivered,
		"params": map[string]any{"messageIds": ids}})
	return msg
}

// writeOut writes one message to the client as one line and flushes it.
// Writers share one lock, so lines never interleave; the flush after each
// message is what wakes a client blocked on its stdin.
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

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
