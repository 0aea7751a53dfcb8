package mcpserver

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A client that is not a bridge never says it received a response, and one
// that hangs up after the response was written (the bytes sit in its kernel,
// never read) looks, to the handler, like one that read it. How the
// connection ends tells them apart, for TCP and Unix sockets alike:
//
//   - A client that closes a socket with unread data makes its kernel reset
//     the connection: our read fails with ECONNRESET.
//   - One that closes after reading ends it with EOF. Over TCP, EOF with some
//     of our bytes not yet acknowledged means it closed before they arrived.
//   - One that closed before we wrote makes the write fail (EPIPE).
//   - One that keeps the connection open has not given up on it: clients
//     close the connection of a request they abandon.
//
// So a response is known received once its connection carried another
// request or ended cleanly, or, when the session makes its next request, if
// that connection is still open.
//
// A reset says the client left bytes unread, not which: a client that read
// its answer and hung up before the response's end ("0\r\n\r\n", which
// net/http writes after the handler returns) resets the connection just like
// one that read nothing. go-sdk's client does that whenever a call's context
// ends as the call returns. So nothing follows an answer on the wire
// (recorder.hold): a response goes whole, with its length, or, once progress
// made it chunked, its answer and its end go in one write, and what it handed
// out is settled at that write (afterWrite). A client that has its answer
// has then read everything, and a reset means it did not get the answer.

// WatchConns wraps the listener of a server that serves /mcp so that the
// server learns how each connection ends. Pair it with ConnContext.
func WatchConns(ln net.Listener) net.Listener { return watchListener{ln, platformProbe} }

// ConnContext is the http.Server ConnContext that goes with WatchConns.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if wc, ok := c.(*watchedConn); ok {
		wc.base = context.WithValue(ctx, connKey{}, wc)
		return wc.base
	}
	return ctx
}

type connKey struct{}

// connOf is the watched connection a request came on, or nil.
func connOf(ctx context.Context) *watchedConn {
	wc, _ := ctx.Value(connKey{}).(*watchedConn)
	return wc
}

type watchListener struct {
	net.Listener
	probe sockProbe
}

func (l watchListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c, probe: l.probe, ended: make(chan struct{})}, nil
}

// watchedConn records how its peer ended it.
type watchedConn struct {
	net.Conn
	probe sockProbe
	ended chan struct{} // closed once the connection ended
	// base is the connection's context: the server's, which ends when the
	// server shuts down, not when a request ends (hijackStream).
	base context.Context

	mu      sync.Mutex
	done    bool                  // ended is closed
	clean   bool                  // the peer had everything written on the connection
	pending []func(error, uint64) // run with the outcome of the next write
	reads   atomic.Uint64         // reads that returned bytes
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.reads.Add(1)
	}
	if err != nil {
		var ne net.Error
		if !(errors.As(err, &ne) && ne.Timeout()) { // the server's deadlines end reads, not the connection
			c.end(errors.Is(err, io.EOF) && c.outq() == 0)
		}
	}
	return n, err
}

// Write notes a write after the end: that the peer had what came before says
// nothing of it.
func (c *watchedConn) Write(p []byte) (int, error) {
	at := c.mark()
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	if c.done {
		c.clean = false
	}
	fs := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, f := range fs {
		f(err, at)
	}
	return n, err
}

// afterWrite runs f with the outcome of the connection's next write, or with
// errNotWritten if the server closes it first. net/http ends every response
// with a write after the handler returned (its buffered rest and last
// chunk), so a handler that calls it as it returns learns whether its
// response went out whole.
func (c *watchedConn) afterWrite(f func(err error, at uint64)) {
	c.mu.Lock()
	c.pending = append(c.pending, f)
	c.mu.Unlock()
}

var errNotWritten = errors.New("connection closed before the response was written")

// Close by the server itself (after a response to a client that asked to
// close, or at shutdown) leaves what was written to the client: nothing says
// it did not get it.
func (c *watchedConn) Close() error {
	c.end(true)
	c.mu.Lock()
	fs := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, f := range fs {
		f(errNotWritten, 0)
	}
	return c.Conn.Close()
}

// CloseWrite keeps http.Server's graceful close of TCP connections.
func (c *watchedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *watchedConn) end(clean bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		c.done, c.clean = true, clean
		close(c.ended)
	}
}

func (c *watchedConn) wasClean() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clean
}

// outq is how many bytes written on the connection its peer has not taken:
// over TCP, not acknowledged. Unknown counts as none.
func (c *watchedConn) outq() (n int) {
	c.control(func(fd int) { n = c.probe.unread(fd) })
	return n
}

// peerGone reports whether the peer closed or reset the connection, from the
// socket's state: the server's reader may not have run since.
func (c *watchedConn) peerGone() bool {
	gone := false
	c.control(func(fd int) { gone = c.probe.peerGone(fd) })
	return gone
}

func (c *watchedConn) control(f func(fd int)) {
	conn := c.Conn
	if tc, ok := conn.(*tls.Conn); ok {
		// A TLS listener's (the daemon's team server): its socket tells
		// the same, in bytes of records.
		conn = tc.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return
	}
	if rc, err := sc.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { f(int(fd)) })
	}
}

// sockProbe reads from the kernel what the server's reader may not have seen
// yet of a connection. Linux tells both (conns_linux.go); elsewhere the
// portable probe knows neither.
type sockProbe interface {
	// peerGone reports whether the peer closed or reset the connection.
	peerGone(fd int) bool
	// unread is how many bytes written the peer has not taken (over TCP,
	// not acknowledged); 0 if that is not known.
	unread(fd int) int
}

// portableProbe knows nothing of the socket. What the reader sees still
// decides (a reset, or EOF after a write that failed, is a response not
// read), and otherwise a response counts as received when the session's
// next request finds its connection open, or its lease runs out and puts it
// back. What it misses: a client that hangs up the moment it sends its next
// request, before the reader runs, counts as having read (a bridge confirms
// by itself and is not affected), and over TCP, an EOF with our last bytes
// unacknowledged counts as clean.
type portableProbe struct{}

func (portableProbe) peerGone(int) bool { return false }
func (portableProbe) unread(int) int    { return 0 }

// endWait bounds how long received waits for the server's reader to see how
// a connection its peer just closed ended; past it, the answer is no.
const endWait = 2 * time.Second

// mark is where the connection is in its reads, taken before a response
// goes out, for received.
func (c *watchedConn) mark() uint64 {
	if c == nil {
		return 0
	}
	return c.reads.Load()
}

// received reports whether the client read everything written on the
// connection up to the response written at mark, as the session's next
// request asks (see above).
func (c *watchedConn) received(at uint64) bool {
	if c == nil {
		return true // not watched (a test server): trust the next request
	}
	if c.reads.Load() > at {
		// The client sent another request on it after that response:
		// HTTP/1.1 asks only once it read the previous answer whole. What
		// became of the connection later says nothing of that answer.
		return true
	}
	select {
	case <-c.ended:
		return c.wasClean()
	default:
	}
	if !c.peerGone() {
		return true
	}
	t := time.NewTimer(endWait)
	defer t.Stop()
	select {
	case <-c.ended:
		return c.wasClean()
	case <-t.C:
		return false
	}
}
