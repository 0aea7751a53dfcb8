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
// (WebSocket text), both ways. The session ends with the connection, and the
// daemon puts back whatever was not confirmed on it; the bridge then answers
// the requests in flight on it with an error, and the next message from the
// client connects anew (Options.Reconnect) and replays the initialization.

// dialTimeout bounds connecting and upgrading: a local round trip.
const dialTimeout = 10 * time.Second

// stream carries the session on one connection at a time.
type stream struct {
	b *bridge

	mu      sync.Mutex
	conn    *streamConn // nil while disconnected
	pushing bool        // the last connection's daemon pushes the agent's messages (api.HeaderPush)
	readers sync.WaitGroup
}

// streamConn is one connection of a stream, and the session it carries.
type streamConn struct {
	st *stream
	c  net.Conn
	w  *bufio.Writer
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
	st := &stream{b: b}
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
func (st *stream) attach(c net.Conn, br *bufio.Reader, pushes bool) *streamConn {
	sc := &streamConn{st: st, c: c, w: bufio.NewWriterSize(c, 64<<10)}
	st.conn, st.pushing = sc, pushes
	st.readers.Add(1)
	go sc.read(br)
	return sc
}

// write writes msg to the server as one line on sc, if sc is still the
// stream's connection.
func (sc *streamConn) write(msg []byte) error {
	sc.st.mu.Lock()
	defer sc.st.mu.Unlock()
	if sc.st.conn != sc {
		return errors.New("connection lost")
	}
	return sc.writeLine(msg)
}

// writeLine writes msg as one line. st.mu is held.
func (sc *streamConn) writeLine(msg []byte) error {
	sc.w.Write(msg)
	sc.w.WriteByte('\n')
	return sc.w.Flush()
}

func (st *stream) pushes() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.pushing
}

// send writes m to the server, connecting first if there is no connection.
// A request written is answered by the server, or with an error if the
// connection is lost first.
func (st *stream) send(_ context.Context, m *message) bool {
	b := st.b
	for attempt := 0; ; attempt++ {
		st.mu.Lock()
		if sc := st.conn; sc != nil {
			b.track(m, nil, sc)
			err := sc.writeLine(m.raw)
			st.mu.Unlock()
			if err == nil {
				return true
			}
			// The server went away before it could read m: safe to send again.
			b.untrack(m)
			sc.lost(err)
		} else {
			st.mu.Unlock()
		}
		err := errors.New("connection lost again")
		if attempt == 0 {
			err = st.reconnect()
		}
		if err != nil {
			b.log.Warn("server unreachable", "method", m.method, "err", err)
			for _, id := range m.ids {
				b.writeError(id, codeInternalError, fmt.Sprintf("parley: server unreachable at %s: %v", b.target, err))
			}
			return false
		}
		// A daemon that does not push (an older one, restarted) leaves it
		// to the extension.
		b.startExtension()
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
	sc := st.attach(c, br, pushes)
	st.mu.Unlock()
	if err := b.replay(sc, sc.write); err != nil {
		// A session that did not initialize serves nothing: the next
		// message starts again.
		c.Close()
		return err
	}
	return nil
}

// read passes what the server sends on sc to the bridge until sc ends.
func (sc *streamConn) read(br *bufio.Reader) {
	defer sc.st.readers.Done()
	lr := &lineReader{r: br, max: maxEvent}
	for {
		l, err := lr.next()
		if err != nil {
			sc.lost(err)
			return
		}
		if l.tooLong {
			sc.st.b.log.Warn("dropping a message from the server", "err", errEventTooLarge)
			continue
		}
		sc.st.b.receive(l.data, sc)
	}
}

// confirm tells the server, on the connection that carried them, that the
// client has the messages.
func (sc *streamConn) confirm(ids []string) {
	if err := sc.write(receiptMsg(ids)); err != nil {
		sc.st.b.log.Warn("confirm delivered messages", "err", err, "count", len(ids))
	}
}

// lost drops sc, answering the requests in flight on it with an error.
func (sc *streamConn) lost(err error) {
	sc.st.mu.Lock()
	current := sc.st.conn == sc
	if current {
		sc.st.conn = nil
	}
	sc.st.mu.Unlock()
	if current {
		sc.c.Close()
		sc.st.b.lost(sc, err)
	}
}

// close ends the run: the connection closes once the message being passed
// on is confirmed, and the session ends with it.
func (st *stream) close(context.Context, []json.RawMessage) {
	st.mu.Lock()
	sc := st.conn
	st.mu.Unlock()
	if sc != nil {
		sc.c.SetReadDeadline(time.Now())
	}
	st.readers.Wait()
}
