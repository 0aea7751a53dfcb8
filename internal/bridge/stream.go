package bridge

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/parley-dev/parley/internal/api"
)

// A Parley daemon serves a session on one connection: the bridge opens a
// WebSocket on the endpoint with the subprotocol api.StreamProtocol, and the
// connection then carries the client's newline-delimited JSON-RPC as it is
// (WebSocket text), both ways. The
// bridge forwards lines; what it adds is what only it can do:
//
//   - it confirms the messages a response handed out once it has written the
//     response to its client (api.MethodDelivered); the session ends with the
//     connection, and the daemon puts back whatever was not confirmed;
//   - with a Pusher extension (`mcp serve --channel`), it asks the daemon to
//     push the agent's messages on the stream (api.HeaderPush): the daemon hands
//     each one to the session, leased, as it arrives and sends it as a
//     api.MethodMessage; the bridge passes it to the extension, writes what that
//     renders to its client, and confirms it like a result's api.MetaDelivered;
//   - when the connection is lost (the daemon restarts), the requests in
//     flight get an error, and the next message reconnects (Options.Reconnect),
//     replays the client's initialize and notifications/initialized, and
//     swallows their answer, which the client already had.

// dialTimeout bounds connecting and upgrading: a local round trip.
const dialTimeout = 10 * time.Second

// stream is the state of a Run over a stream session.
type stream struct {
	b *bridge

	mu        sync.Mutex
	conn      net.Conn      // nil while disconnected
	w         *bufio.Writer // on conn
	closing   bool
	inflight  map[string]json.RawMessage // requests sent on conn awaiting answers, by idKey
	rewrite   string                     // idKey of the client's initialize: the extension may rewrite its answer
	swallow   string                     // idKey of a replayed initialize: its answer is not the client's
	swallowed chan error                 // gets the replayed initialize's fate
	pushing   bool                       // conn's daemon pushes the agent's messages (api.HeaderPush)

	// The main loop's alone.
	initMsg, initializedMsg []byte
	initKey                 string

	readers sync.WaitGroup
}

// RefusedError is a server's answer other than 101 to a stream upgrade.
type RefusedError struct {
	Status int
	Body   string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("server refused the stream: HTTP %d: %s", e.Status, truncate([]byte(e.Body), errTextLimit))
}

// openStream connects the stream, or returns nil when the server does not
// offer one (an older daemon, or one that refused this identity: over HTTP it
// says why in the client's own terms). A server that cannot be reached yet
// is reconnected with the first message.
func (b *bridge) openStream() *stream {
	st := &stream{b: b, inflight: map[string]json.RawMessage{}}
	c, br, pushes, err := b.dialStream(b.ctx)
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		b.log.Info("no stream session; bridging over HTTP", "err", err)
		return nil
	case err == nil:
		st.attach(c, br, pushes)
	}
	return st
}

// dialStream connects to the server and upgrades the connection, asking
// for pushes when the extension takes them; pushes reports whether the
// server will push.
func (b *bridge) dialStream(ctx context.Context) (c net.Conn, br *bufio.Reader, pushes bool, err error) {
	network, addr := "unix", b.opts.SocketPath
	if addr == "" {
		u, _ := url.Parse(b.endpoint) // checked by newBridge
		network, addr = "tcp", u.Host
		if u.Port() == "" {
			port := "80"
			if u.Scheme == "https" {
				port = "443"
			}
			addr = net.JoinHostPort(u.Hostname(), port)
		}
	}
	h := b.base
	if _, ok := b.opts.Extension.(Pusher); ok {
		h = h.Clone()
		h[api.HeaderPush] = []string{"1"}
	}
	c, br, resp, err := dialStream(ctx, network, addr, b.endpoint, h, b.opts.TLSConfig)
	if err != nil {
		return nil, nil, false, err
	}
	return c, br, h.Get(api.HeaderPush) != "" && resp.Get(api.HeaderPush) != "", nil
}

// DialStream connects to a Parley daemon at addr and asks for a stream
// session at endpoint (a URL; only its path and host are sent), with the
// identity and authorization in h. It returns the connection, and a reader
// on it; a refusal is a *RefusedError.
func DialStream(ctx context.Context, network, addr, endpoint string, h http.Header) (net.Conn, *bufio.Reader, error) {
	c, br, _, err := dialStream(ctx, network, addr, endpoint, h, nil)
	return c, br, err
}

// dialStream is DialStream that also returns the headers of the 101; an
// https endpoint is reached with TLS (tlsConf, or the system's roots).
func dialStream(ctx context.Context, network, addr, endpoint string, h http.Header, tlsConf *tls.Config) (net.Conn, *bufio.Reader, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	var d net.Dialer
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, network, addr) },
	}
	if tlsConf != nil {
		tr.TLSClientConfig = tlsConf.Clone()
	} else {
		tr.TLSClientConfig = &tls.Config{}
	}
	// The upgrade is HTTP/1.1's: never offer HTTP/2.
	tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	hc := &http.Client{Transport: tr}
	ws, resp, err := websocket.Dial(ctx, endpoint, &websocket.DialOptions{HTTPClient: hc, HTTPHeader: h,
		Subprotocols: []string{api.StreamProtocol}})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, nil, nil, &RefusedError{resp.StatusCode, readErrBody(resp)}
		}
		return nil, nil, nil, fmt.Errorf("upgrade: %w", err)
	}
	if ws.Subprotocol() != api.StreamProtocol {
		ws.CloseNow()
		return nil, nil, nil, &RefusedError{http.StatusSwitchingProtocols, "the server does not speak " + api.StreamProtocol}
	}
	// The stream outlives the dial; closing it ends it.
	c := websocket.NetConn(context.Background(), ws, websocket.MessageText)
	return c, bufio.NewReaderSize(c, 64<<10), resp.Header, nil
}

// attach makes c the stream's connection and starts reading it. st.mu is
// held, or nothing else runs yet.
func (st *stream) attach(c net.Conn, br *bufio.Reader, pushes bool) {
	st.conn, st.w, st.pushing = c, bufio.NewWriterSize(c, 64<<10), pushes
	st.readers.Add(1)
	go st.read(c, br)
}

// writeLine writes msg to the server as one line. st.mu is held, and there
// is a connection.
func (st *stream) writeLine(msg []byte) error {
	st.w.Write(msg)
	st.w.WriteByte('\n')
	return st.w.Flush()
}

// handleLine forwards one line from the client, in order.
func (st *stream) handleLine(l line) {
	b := st.b
	m := b.parse(l)
	if m == nil {
		return
	}
	if len(m.ids) == 0 {
		if ext := b.opts.Extension; ext != nil && ext.Intercept(b.ctx, m.method, m.raw, b.writeOut) {
			return
		}
	}
	if m.isInit {
		// A second initialize replaces the first; it is not replayed before
		// itself.
		st.initMsg, st.initializedMsg = nil, nil
	}
	if err := st.send(m); err != nil {
		b.log.Warn("server unreachable", "method", m.method, "err", err)
		b.fail(m, fmt.Sprintf("parley: server unreachable at %s: %v", b.target, err))
		return
	}
	switch {
	case m.isInit:
		st.initMsg, st.initKey = m.raw, idKey(m.ids[0])
	case m.method == "notifications/initialized":
		st.initializedMsg = m.raw
		st.startExtension()
	case m.method == "notifications/cancelled":
		// The server answers a cancelled call, or not; the client expects
		// nothing either way.
		if id := cancelledID(m.raw); id != "" {
			st.mu.Lock()
			delete(st.inflight, id)
			st.mu.Unlock()
		}
	}
}

// startExtension starts the extension once the client has initialized,
// unless the daemon pushes what it would fetch. Main loop only.
func (st *stream) startExtension() {
	b := st.b
	ext := b.opts.Extension
	if ext == nil || st.initializedMsg == nil {
		return
	}
	st.mu.Lock()
	pushing := st.pushing
	st.mu.Unlock()
	if _, ok := ext.(Pusher); ok && pushing {
		return
	}
	b.extOnce.Do(func() { b.spawn(func() { ext.Start(b.ctx, b.writeOut) }) })
}

// send writes m to the server, connecting first if there is no connection.
// A request written is answered by the server, or with an error if the
// connection is lost first.
func (st *stream) send(m *message) error {
	for attempt := 0; ; attempt++ {
		st.mu.Lock()
		c := st.conn
		if c != nil {
			err := st.writeLine(m.raw)
			if err == nil {
				for _, id := range m.ids {
					st.inflight[idKey(id)] = id
				}
				if m.isInit {
					st.rewrite = idKey(m.ids[0])
				}
			}
			st.mu.Unlock()
			if err == nil {
				return nil
			}
			// The server went away before it could read m: safe to send again.
			st.lost(c, err)
		} else {
			st.mu.Unlock()
		}
		if attempt > 0 {
			return errors.New("connection lost again")
		}
		if err := st.reconnect(); err != nil {
			return err
		}
		// A daemon that does not push (an older one, restarted) leaves it
		// to the extension.
		st.startExtension()
	}
}

// reconnect connects anew, restarting the server if it cannot be reached,
// and replays the client's initialization on the new session.
func (st *stream) reconnect() error {
	b := st.b
	c, br, pushes, err := b.dialStream(b.ctx)
	if err != nil && isDialError(err) && b.opts.Reconnect != nil {
		if rerr := b.opts.Reconnect(b.ctx); rerr != nil {
			return fmt.Errorf("%w (reconnect: %w)", err, rerr)
		}
		c, br, pushes, err = b.dialStream(b.ctx)
	}
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closing {
		c.Close()
		return errors.New("shutting down")
	}
	st.attach(c, br, pushes)
	if st.initMsg == nil {
		return nil
	}
	done := make(chan error, 1)
	st.swallow, st.swallowed = st.initKey, done
	if err := st.writeLine(st.initMsg); err != nil {
		st.swallow = ""
		c.Close()
		return fmt.Errorf("re-initialize: %w", err)
	}
	// The server must have answered initialize before it takes
	// notifications/initialized.
	st.mu.Unlock()
	t := time.NewTimer(dialTimeout)
	select {
	case err = <-done:
	case <-t.C:
		err = errors.New("no answer")
	}
	t.Stop()
	st.mu.Lock()
	if err == nil && st.conn != c {
		err = errors.New("connection lost")
	}
	if err == nil && st.initializedMsg != nil {
		err = st.writeLine(st.initializedMsg)
	}
	if err != nil {
		// A session that did not initialize serves nothing: the next
		// message starts again.
		st.swallow = ""
		c.Close()
		return fmt.Errorf("re-initialize: %w", err)
	}
	b.log.Info("session re-initialized on a new stream")
	return nil
}

// read forwards what the server sends on c to the client until c ends.
func (st *stream) read(c net.Conn, br *bufio.Reader) {
	defer st.readers.Done()
	lr := &lineReader{r: br, max: maxEvent}
	for {
		l, err := lr.next()
		if err != nil {
			st.lost(c, err)
			return
		}
		if l.tooLong {
			st.b.log.Warn("dropping a message from the server", "err", errEventTooLarge)
			continue
		}
		st.receive(c, l.data)
	}
}

// receive passes one message from the server on to the client, then
// confirms what it handed out.
func (st *stream) receive(c net.Conn, msg []byte) {
	b := st.b
	if msg[0] == '[' {
		var batch []envelope
		if json.Unmarshal(msg, &batch) == nil {
			st.mu.Lock()
			for _, e := range batch {
				if e.Method == "" {
					delete(st.inflight, idKey(e.ID))
				}
			}
			st.mu.Unlock()
		}
	} else if env := (envelope{}); json.Unmarshal(msg, &env) == nil && env.Method == "" {
		k := idKey(env.ID)
		st.mu.Lock()
		delete(st.inflight, k)
		swallow, done := k == st.swallow && c == st.conn, st.swallowed
		if swallow {
			st.swallow = ""
		}
		rewrite := k == st.rewrite
		if rewrite {
			st.rewrite = ""
		}
		st.mu.Unlock()
		if swallow {
			if len(env.Error) > 0 {
				done <- fmt.Errorf("the server refused it: %s", truncate(env.Error, errTextLimit))
			} else {
				done <- nil
			}
			return
		}
		if rewrite {
			msg = b.initResult(msg)
		}
	} else if env.Method == api.MethodMessage {
		st.push(c, msg)
		return
	}
	if b.writeOut(msg) != nil {
		return // the client is gone: the run ends, and so does the session
	}
	if ids := deliveredIDs(msg); len(ids) > 0 {
		st.confirm(c, ids)
	}
}

// push passes a message the daemon pushed to the extension, writes what it
// renders to the client, and confirms it.
func (st *stream) push(c net.Conn, msg []byte) {
	b := st.b
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
		st.confirm(c, ids)
	}
}

// confirm tells the server, on the connection that carried them, that the
// client has the messages.
func (st *stream) confirm(c net.Conn, ids []string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.conn != c {
		return // that session ended, and put them back
	}
	if err := st.writeLine(receiptMsg(ids)); err != nil {
		st.b.log.Warn("confirm delivered messages", "err", err, "count", len(ids))
	}
}

// lost drops c, answering the requests in flight on it with an error: the
// server may have acted on them, so only the client may retry.
func (st *stream) lost(c net.Conn, err error) {
	st.mu.Lock()
	if st.conn != c {
		st.mu.Unlock()
		return
	}
	st.conn, st.w = nil, nil
	ids := make([]json.RawMessage, 0, len(st.inflight))
	for k, id := range st.inflight {
		ids = append(ids, id)
		delete(st.inflight, k)
	}
	if st.swallow != "" {
		st.swallow = ""
		st.swallowed <- err
	}
	closing := st.closing
	st.mu.Unlock()
	c.Close()
	if closing {
		return
	}
	st.b.log.Warn("connection to the server lost", "err", err, "in_flight", len(ids))
	for _, id := range ids {
		st.b.writeError(id, codeInternalError, "parley: "+msgLost)
	}
}

// shutdown ends the run: the connection closes once the message being
// passed on is confirmed, and the session ends with it.
func (st *stream) shutdown(context.Context) {
	st.b.mu.Lock()
	st.b.closing = true // no extension starts now
	st.b.mu.Unlock()
	st.mu.Lock()
	st.closing = true
	c := st.conn
	st.mu.Unlock()
	st.b.cancel(nil)
	if c != nil {
		c.SetReadDeadline(time.Now())
	}
	st.readers.Wait()
	st.b.wg.Wait()
}
