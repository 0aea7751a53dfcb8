package mcpserver

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"

	"github.com/parley-dev/parley/internal/workaround"
)

// A session's GET stream (its standalone SSE stream) stays open as long as
// the session, mostly silent. Served by net/http, each one kept the
// connection's goroutine (its stack grown by the requests the connection
// served before), the goroutine net/http reads with to notice a hang-up,
// 10 KB of read and write buffers, and the connection's state: about a third
// of an idle session's memory. So ServeHTTP takes the connection over
// (hijackStream), and the SDK's handler writes the stream straight to it from
// a fresh goroutine, without buffers: the SDK writes each event whole and
// flushes it at once.

// hijackStream serves r, a GET of sess's stream, on its hijacked connection,
// and reports whether it did; it returns at once, the stream going on in
// goroutines of its own. The stream counts as a request of sess until it
// ends, as it would over net/http.
func (s *Server) hijackStream(w http.ResponseWriter, r *http.Request, sess *session) bool {
	wc := connOf(r.Context())
	if wc == nil || wc.base == nil || !r.ProtoAtLeast(1, 1) || workaround.Off("hijackget") {
		return false
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	// The stream ends when the daemon shuts down (the connection's base
	// context) or the client hangs up, not when this handler returns.
	ctx, cancel := context.WithCancelCause(wc.base)
	go func() {
		// A client sends nothing more on its stream's connection: a read
		// ends only when the client hangs up (or the stream ends and the
		// connection is closed below).
		var b [1]byte
		for {
			if _, err := conn.Read(b[:]); err != nil {
				cancel(errGone)
				return
			}
		}
	}()
	go func() {
		rw := &streamResponse{conn: conn, header: http.Header{}}
		s.handler.ServeHTTP(rw, r.WithContext(ctx))
		gone := ctx.Err() != nil
		rw.finish()
		cancel(nil)
		conn.Close()
		s.requestEnded(sess, gone)
		if gone {
			// The client hung up its stream (a killed client closes it
			// first): what it has not confirmed goes back, and so do the
			// tasks it claimed.
			sess.caller.Reader.Lost(ctx)
		}
	}()
	return true
}

// streamResponse is the http.ResponseWriter of a hijacked stream: an
// HTTP/1.1 response with a chunked body (net/http/httputil's framing),
// written to the connection as the handler writes it, each write flushed.
// The connection closes with the response.
type streamResponse struct {
	conn   net.Conn
	header http.Header

	mu     sync.Mutex
	status int  // set by WriteHeader or the first write
	sent   bool // the status line and header went out
	err    error
}

// writeBufs lends a stream a buffer for one write at a time. An idle stream,
// which most are, holds none: a buffer of its own was 4 KB a session, 40 MB
// of the daemon's memory with 10,000 sessions open.
var writeBufs = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}

func (w *streamResponse) Header() http.Header { return w.header }

func (w *streamResponse) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = code
	}
}

// Write sends p as one chunk, behind the header if that has not gone yet.
func (w *streamResponse) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.send(func(bw *bufio.Writer) error {
		_, err := httputil.NewChunkedWriter(bw).Write(p)
		return err
	})
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

// Flush sends the header if it has not gone yet: the body goes as written.
func (w *streamResponse) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.send(nil)
}

// finish ends the body: its last chunk, and the empty trailer.
func (w *streamResponse) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.send(func(bw *bufio.Writer) error {
		if err := httputil.NewChunkedWriter(bw).Close(); err != nil {
			return err
		}
		_, err := bw.WriteString("\r\n")
		return err
	})
}

// send writes to the connection, in one flush, the status line and header
// if they have not gone yet, then what body writes (if not nil). w.mu is
// held.
func (w *streamResponse) send(body func(*bufio.Writer) error) {
	if w.err != nil {
		return
	}
	bw := writeBufs.Get().(*bufio.Writer)
	bw.Reset(w.conn)
	defer func() {
		bw.Reset(nil)
		writeBufs.Put(bw)
	}()
	if !w.sent {
		w.sent = true
		if w.status == 0 {
			w.status = http.StatusOK
		}
		w.header.Del("Content-Length")
		w.header.Set("Transfer-Encoding", "chunked")
		w.header.Set("Connection", "close")
		fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\n", w.status, http.StatusText(w.status))
		w.header.Write(bw)
		bw.WriteString("\r\n")
	}
	if body != nil {
		w.err = body(bw)
	}
	if w.err == nil {
		w.err = bw.Flush()
	}
}
