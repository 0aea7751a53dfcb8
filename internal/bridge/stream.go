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
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/parley-dev/parley/internal/api"
)

// A Parley daemon serves a session on one connection: a WebSocket with the
// subprotocol api.StreamProtocol that carries the client's lines as they
// are, both ways. The session ends with the connection, and the daemon puts
// back what was not confirmed on it; the requests in flight on it get an
// error, and the next message connects anew (Options.Reconnect) and
// replays the initialization.

// dialTimeout bounds connecting and upgrading: a local round trip.
const dialTimeout = 10 * time.Second

// stream carries the session on one connection at a time.
type stream struct {
	b *bridge

	mu      sync.Mutex
	conn    *streamConn // nil while disconnected
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
	return fmt.Sprintf("the server refused the session: HTTP %d %s: %s", e.Status, http.StatusText(e.Status), truncate(bytes.TrimSpace([]byte(e.Body)), errTextLimit))
}

// openStream connects the stream. A server that cannot be reached yet, or
// refuses the session (this identity, this profile), is dialled again with
// the first message, which gets the refusal as its answer.
func (b *bridge) openStream() *stream {
	st := &stream{b: b}
	if c, br, err := b.dialStream(b.ctx); err == nil {
		st.attach(c, br)
	} else {
		b.log.Info("no stream session yet", "err", err)
	}
	return st
}

// dialStream connects to the server and upgrades the connection.
func (b *bridge) dialStream(ctx context.Context) (net.Conn, *bufio.Reader, error) {
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
	return DialStream(ctx, network, addr, b.endpoint, b.base, b.opts.TLSConfig)
}

// DialStream connects to a Parley daemon at addr and asks for a stream
// session at endpoint (a URL; only its path and host are sent; an https one
// is reached with TLS, tlsConf or the system's roots), with the identity
// and authorization in h. It returns the connection, and a reader on it; a
// refusal is a *RefusedError.
func DialStream(ctx context.Context, network, addr, endpoint string, h http.Header, tlsConf *tls.Config) (net.Conn, *bufio.Reader, error) {
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
	ws, resp, err := websocket.Dial(ctx, endpoint, &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}, HTTPHeader: h,
		Subprotocols: []string{api.StreamProtocol}})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, errBodyLimit))
			resp.Body.Close()
			return nil, nil, &RefusedError{resp.StatusCode, string(body)}
		}
		return nil, nil, fmt.Errorf("upgrade: %w", err)
	}
	if ws.Subprotocol() != api.StreamProtocol {
		ws.CloseNow()
		return nil, nil, &RefusedError{http.StatusSwitchingProtocols, "the server does not speak " + api.StreamProtocol}
	}
	// The stream outlives the dial; closing it ends it.
	c := websocket.NetConn(context.Background(), ws, websocket.MessageText)
	return c, bufio.NewReaderSize(c, 64<<10), nil
}

// attach makes c the stream's connection and starts reading it. st.mu is
// held, or nothing else runs yet.
func (st *stream) attach(c net.Conn, br *bufio.Reader) *streamConn {
	sc := &streamConn{st: st, c: c, w: bufio.NewWriterSize(c, 64<<10)}
	st.conn = sc
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

// send writes m to the server, connecting first if there is no connection:
// the server answers it, or the bridge does if the connection is lost first.
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
			text := fmt.Sprintf("parley: server unreachable at %s: %v", b.target, err)
			if refused := (*RefusedError)(nil); errors.As(err, &refused) {
				text = "parley: " + refused.Error()
			}
			b.refuse(m, codeInternalError, text)
			return false
		}
	}
}

// reconnect connects anew, restarting the server if it cannot be reached,
// and replays the client's initialization on the new session.
func (st *stream) reconnect() error {
	b := st.b
	c, br, err := b.dialStream(b.ctx)
	if err != nil && isDialError(err) && b.opts.Reconnect != nil {
		if rerr := b.opts.Reconnect(b.ctx); rerr != nil {
			return fmt.Errorf("%w (reconnect: %w)", err, rerr)
		}
		c, br, err = b.dialStream(b.ctx)
	}
	if err != nil {
		return err
	}
	st.mu.Lock()
	sc := st.attach(c, br)
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
	lr := &lineReader{r: br, max: maxLine}
	for {
		l, err := lr.next()
		if err != nil {
			sc.lost(err)
			return
		}
		if l.tooLong {
			sc.st.b.log.Warn("dropping a message from the server longer than the limit", "limit", maxLine)
			continue
		}
		sc.st.b.receive(l.data, sc)
	}
}

// confirm tells the server, on the connection that carried them, that the
// client has the messages.
func (sc *streamConn) confirm(ids []string) {
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": api.MethodDelivered, "params": map[string]any{"messageIds": ids}})
	if err := sc.write(msg); err != nil {
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
