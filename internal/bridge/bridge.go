// Package bridge connects an MCP client that speaks stdio (newline-delimited
// JSON-RPC) to an MCP server: with Options.Stream, to a Parley daemon's
// stream session, one connection that carries the lines as they are
// (stream.go); otherwise to any Streamable HTTP server, through the go-sdk's
// client transport (generic.go). The client's side is written once (this
// file): its lines, its initialize replayed on a new session, the requests
// in flight (answered with an error when the session is lost: none is left
// without an answer), cancellations, the Extension, and confirming what a
// response handed out once it is written (api.MetaDelivered). JSON-RPC
// payloads are opaque to it apart from their id and method. It is imported
// by internal/cli (`parley mcp serve`, `parley bridge`).
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
	"sync"
	"time"

	"github.com/parley-dev/parley/internal/api"
)

// Options configures Run.
type Options struct {
	// Exactly one of SocketPath and URL. With SocketPath, requests go over
	// the Unix socket to http://parley/mcp; with URL, to URL.
	SocketPath string
	URL        string
	Header     http.Header  // added to every HTTP request (identity, Authorization)
	Logger     *slog.Logger // nil: discard; never stdout, which is the protocol's
	// Stream asks the server for the session as one connection (a Parley
	// daemon's stream session; stream.go) instead of an HTTP request per
	// message. A server that refuses it answers each request with its
	// reason.
	Stream bool
	// Reconnect, if set, is called on a stream when the server cannot be
	// reached: it may restart the server, and when it returns nil the bridge
	// connects again and replays the client's initialization.
	Reconnect func(ctx context.Context) error
	// Extension, if set, speaks what the server does not, on a stream: `mcp
	// serve --channel` adds Claude Code's channel this way.
	Extension Extension
	// TLSConfig, for an https URL, replaces the system's defaults: a team
	// server whose certificate a private CA signed (`mcp serve --ca-file`).
	TLSConfig *tls.Config
}

// Extension adds to the protocol between the client and a Parley daemon
// whose session pushes the agent's messages (api.Hello.Push, in Header):
// the bridge passes each api.MethodMessage to Push, writes what Push
// returns to the client, and then confirms the message as it confirms a
// result's api.MetaDelivered.
type Extension interface {
	// InitResult may rewrite the server's initialize response before the
	// client sees it (to declare capabilities).
	InitResult(msg []byte) []byte
	// Push renders the params of an api.MethodMessage for the client; nil
	// drops it unconfirmed (it goes back to the inbox, marked redelivered,
	// when the session ends).
	Push(params json.RawMessage) []byte
	// Intercept sees every notification from the client; true keeps it from
	// the server. ctx ends with the bridge; write sends to the client.
	Intercept(ctx context.Context, method string, raw []byte, write func(msg []byte) error) bool
}

const (
	// maxLine bounds one line, from the client or the server; MCP payloads
	// (file contents, images) can be large, so this is far above the 16
	// MiB that clients may send.
	maxLine = 64 << 20
	// errBodyLimit bounds how much of an HTTP error body is read and quoted.
	errBodyLimit = 4 << 10
	errTextLimit = 512

	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeInternalError  = -32603

	msgLost = "connection to the server was lost while the request was in flight; retry it"
)

// Run copies JSON-RPC messages between in (newline-delimited, from the MCP
// client) and the server until in reaches EOF or ctx is cancelled. It
// writes every message for the client to out as one line. On return it has
// cancelled every request still in flight and ended the session. If ctx is
// cancelled while a Read on in is blocked, the goroutine reading in exits
// only when that Read returns.
func Run(ctx context.Context, in io.Reader, out io.Writer, opts *Options) error {
	b, err := newBridge(opts, out)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	b.ctx, b.cancel = runCtx, cancel
	if opts.Stream {
		b.t = b.openStream()
	} else {
		b.t = newGeneric(b)
	}
	read := make(chan error, 1)
	go func() { read <- b.readClient(in) }()
	var result error
	select {
	case result = <-read:
	case <-runCtx.Done():
	}
	b.shutdown(ctx)
	if cause := context.Cause(runCtx); result == nil && cause != nil && ctx.Err() == nil && !errors.Is(cause, context.Canceled) {
		result = cause // the only cause set from inside: a failed write to the client
	}
	return result
}

// A transport carries the session between the bridge and the server.
type transport interface {
	// send passes m to the server, in the client's order, tracking its
	// request (bridge.track); what comes back goes to bridge.receive. A
	// request that cannot be sent, or is left unanswered, it answers with
	// an error (bridge.fail, bridge.lost); a session the server lost it
	// makes again (bridge.replay). False: the server did not get m.
	send(ctx context.Context, m *message) bool
	// close ends the session; abandoned are the requests still in flight,
	// which nobody waits for now.
	close(ctx context.Context, abandoned []json.RawMessage)
}

// A carrier is the connection a message from the server came on: the
// messages it handed out are confirmed on it.
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
	lineMu sync.Mutex // held while a line from the client is handled

	outMu  sync.Mutex
	out    *bufio.Writer
	outErr error

	mu             sync.Mutex
	closing        bool
	inflight       map[string]*flight // by id key
	initMsg        []byte             // the client's initialize, replayed on a new session
	initID         json.RawMessage
	initializedMsg []byte    // the client's notifications/initialized
	rewrite        string    // id key of the client's initialize until it is answered: the extension may rewrite the answer
	replaying      *replayed // a replayed initialize awaiting its answer
	wg             sync.WaitGroup
}

// flight is a request awaiting its answer.
type flight struct {
	m      *message
	cancel context.CancelFunc // stops the transport waiting for the answer, if it waits
	via    carrier            // what it was sent on
}

// replayed is a replayed initialize awaiting its answer, which the client
// had once already.
type replayed struct {
	key  string
	via  carrier
	done chan error
}

func newBridge(opts *Options, out io.Writer) (*bridge, error) {
	if opts == nil || (opts.SocketPath == "") == (opts.URL == "") {
		return nil, errors.New("bridge: exactly one of SocketPath and URL must be set")
	}
	b := &bridge{opts: opts, log: opts.Logger, out: bufio.NewWriterSize(out, 64<<10), inflight: map[string]*flight{},
		base: opts.Header.Clone(), endpoint: "http://parley/mcp", target: opts.SocketPath}
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
	defer b.mu.Unlock()
	if b.closing {
		return false
	}
	b.wg.Go(f)
	return true
}

// readClient passes each line from the client to handleLine until the end
// of in (nil) or a read error, or the run's end.
func (b *bridge) readClient(in io.Reader) error {
	lr := newLineReader(in, maxLine)
	for {
		l, err := lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read from client: %w", err)
		}
		b.lineMu.Lock()
		if b.ctx.Err() != nil {
			b.lineMu.Unlock()
			return nil
		}
		b.handleLine(l)
		b.lineMu.Unlock()
	}
}

// handleLine passes one line from the client to the transport, which sends
// it before the next line is read: the server must see messages in the
// order the client wrote them (initialize, notifications/initialized, ...).
func (b *bridge) handleLine(l line) {
	if l.tooLong {
		b.writeError(nil, codeParseError, fmt.Sprintf("parse error: message longer than %d bytes", maxLine))
		return
	}
	m, code, err := parseMessage(l.data)
	if err != nil {
		// The line may hold a message's content: log its size, not its text.
		b.log.Warn("bad message from client", "err", err, "bytes", len(l.data))
		var id json.RawMessage
		if m != nil {
			id = m.id
		}
		b.writeError(id, code, err.Error())
		return
	}
	if ext := b.opts.Extension; m.id == nil && ext != nil && ext.Intercept(b.ctx, m.method, m.raw, b.writeOut) {
		return
	}
	b.mu.Lock()
	if m.isInit {
		// A second initialize replaces the first; it is not replayed
		// before itself.
		b.initMsg, b.initializedMsg, b.rewrite = nil, nil, idKey(m.id)
	}
	b.mu.Unlock()
	sent := b.t.send(b.ctx, m)
	b.mu.Lock()
	switch {
	case m.isInit && !sent:
		b.rewrite = ""
	case m.isInit:
		b.initMsg, b.initID = m.raw, m.id
	case sent && m.method == "notifications/initialized":
		b.initializedMsg = m.raw
	}
	b.mu.Unlock()
	if sent && m.method == "notifications/cancelled" {
		b.cancelled(m.raw)
	}
}

// track adds the request in m to the table of requests in flight.
func (b *bridge) track(m *message, cancel context.CancelFunc, via carrier) {
	if m.id != nil {
		b.mu.Lock()
		b.inflight[idKey(m.id)] = &flight{m: m, cancel: cancel, via: via}
		b.mu.Unlock()
	}
}

// carried: the request in m, if still in flight, went on via.
func (b *bridge) carried(m *message, via carrier) {
	b.mu.Lock()
	if f := b.inflight[idKey(m.id)]; f != nil && f.m == m {
		f.via = via
	}
	b.mu.Unlock()
}

// untrack removes the request in m if it is still in flight, unanswered,
// and reports whether it was.
func (b *bridge) untrack(m *message) bool {
	if m.id == nil {
		return false
	}
	k := idKey(m.id)
	b.mu.Lock()
	defer b.mu.Unlock()
	if f := b.inflight[k]; f == nil || f.m != m { // a later request may have reused the id
		return false
	}
	delete(b.inflight, k)
	if k == b.rewrite {
		b.rewrite = ""
	}
	return true
}

// fail answers the request in m, if still in flight, with an error.
func (b *bridge) fail(m *message, code int, text string) {
	if b.untrack(m) {
		b.writeError(m.id, code, text)
	}
}

// refuse answers m, not in flight, with an error if it is a request.
func (b *bridge) refuse(m *message, code int, text string) {
	if m.id != nil {
		b.writeError(m.id, code, text)
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
			ids = append(ids, f.m.id)
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

// cancelled stops waiting for the request that a notifications/cancelled
// from the client names: the server has been told, and the client expects
// no answer.
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
	if f != nil && f.cancel != nil {
		f.cancel()
	}
}

// replay sends the client's initialize again on a new session (write sends
// one message on it, whose answers come via via), swallows the answer, and
// then sends notifications/initialized.
func (b *bridge) replay(via carrier, write func(msg []byte) error) error {
	done := make(chan error, 1)
	b.mu.Lock()
	initMsg, initializedMsg := b.initMsg, b.initializedMsg
	if initMsg != nil {
		b.replaying = &replayed{key: idKey(b.initID), via: via, done: done}
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
		select {
		case err = <-done:
		case <-time.After(dialTimeout):
			err = errors.New("no answer")
		}
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
// and what a result or a push handed out is confirmed via the carrier once
// written.
func (b *bridge) receive(msg []byte, via carrier) {
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(msg, &env); err != nil {
		b.log.Warn("dropping malformed message from server", "err", err, "data", truncate(msg, errTextLimit))
		return
	}
	switch env.Method {
	case "":
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
				err := fmt.Errorf("the server refused it: %s", truncate(env.Error, errTextLimit))
				r.done <- err
			} else {
				r.done <- nil
			}
			return
		}
		if rewrite && b.opts.Extension != nil {
			msg = b.opts.Extension.InitResult(msg)
		}
	case api.MethodMessage:
		var n struct {
			Params json.RawMessage `json:"params"`
		}
		if b.opts.Extension == nil || json.Unmarshal(msg, &n) != nil {
			b.log.Warn("dropping a pushed message", "bytes", len(msg))
			return
		}
		ids := deliveredIn(msg)
		if msg = b.opts.Extension.Push(n.Params); msg == nil {
			return
		}
		if b.writeOut(msg) == nil && len(ids) > 0 {
			via.confirm(ids)
		}
		return
	}
	if err := b.writeOut(msg); err != nil {
		b.log.Warn("dropping message from server", "err", err)
		return // the client is gone: the run ends, and so does the session
	}
	if ids := deliveredIn(msg); len(ids) > 0 {
		via.confirm(ids)
	}
}

// shutdown ends the run: the client is gone, so the requests in flight are
// abandoned, and the transport ends the session once nothing else runs.
func (b *bridge) shutdown(ctx context.Context) {
	b.cancel(nil)
	b.lineMu.Lock() // the line being handled, if any, is sent
	defer b.lineMu.Unlock()
	b.mu.Lock()
	b.closing = true
	var abandoned []json.RawMessage
	for _, f := range b.inflight {
		abandoned = append(abandoned, f.m.id)
		if f.cancel != nil {
			f.cancel() // its transport stops waiting for the answer
		}
	}
	b.mu.Unlock()
	b.wg.Wait()
	b.t.close(ctx, abandoned)
}

// writeError writes a JSON-RPC error response; a nil id is written as null.
func (b *bridge) writeError(id json.RawMessage, code int, text string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": text}})
	if err := b.writeOut(msg); err != nil {
		b.log.Warn("write error response", "err", err)
	}
}

// deliveredIn returns the message ids that a result or a pushed message
// (msg's result or params) lists under _meta[api.MetaDelivered].
func deliveredIn(msg []byte) []string {
	if !bytes.Contains(msg, []byte(`"`+api.MetaDelivered+`"`)) {
		return nil
	}
	type meta struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	var m struct{ Result, Params meta }
	var ids []string
	if json.Unmarshal(msg, &m) == nil {
		json.Unmarshal(append(m.Result.Meta[api.MetaDelivered], m.Params.Meta[api.MetaDelivered]...), &ids)
	}
	return ids
}

// writeOut writes one message (one line: the daemon's lines, the SDK's
// encodings and the extension's are) to the client and flushes it. Writers
// share one lock, so lines never interleave; the flush after each message
// is what wakes a client blocked on its stdin.
func (b *bridge) writeOut(msg []byte) error {
	b.outMu.Lock()
	defer b.outMu.Unlock()
	if b.outErr != nil {
		return b.outErr
	}
	b.out.Write(msg)
	b.out.WriteByte('\n')
	if err := b.out.Flush(); err != nil {
		b.outErr = fmt.Errorf("write to client: %w", err)
		b.cancel(b.outErr)
	}
	return b.outErr
}

// isDialError reports whether err means no connection to the server could
// be made, so the request cannot have reached it.
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
