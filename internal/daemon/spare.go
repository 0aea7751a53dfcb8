package daemon

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// spare keeps one file descriptor in reserve for a daemon that runs out of
// them. net/http's accept loop meets EMFILE by sleeping and retrying, so a
// client's connection waited in the backlog, silent, until some descriptor
// came free (a CLI send hung for 36 s). With the spare, the listener gives
// its descriptor up, accepts, answers 503 with the JSON API's error body
// saying why, closes, and takes the spare back: the client is told at once.
type spare struct {
	mu      sync.Mutex
	f       *os.File
	log     *slog.Logger
	refused int       // connections answered 503 since the last log line
	logged  time.Time // when the last log line was written
}

func newSpare(log *slog.Logger) *spare {
	s := &spare{log: log}
	s.f, _ = os.Open(os.DevNull)
	return s
}

// close gives the spare up for good (the daemon is closing).
func (s *spare) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// wrap returns ln answering the connections it cannot serve for want of
// descriptors.
func (s *spare) wrap(ln net.Listener) net.Listener { return &spareListener{Listener: ln, s: s} }

type spareListener struct {
	net.Listener
	s *spare
}

func (l *spareListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err == nil || !outOfFiles(err) {
			return c, err
		}
		if !l.s.refuse(l.Listener) {
			// No spare to give up (something else took it): net/http
			// sleeps and retries, as before.
			return nil, err
		}
	}
}

// refuse trades the spare for one connection of ln, answers it and takes
// the spare back. It reports whether it had a spare to trade.
func (s *spare) refuse(ln net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		if s.f, _ = os.Open(os.DevNull); s.f == nil {
			return false
		}
	}
	s.f.Close()
	s.f = nil
	c, err := ln.Accept()
	if err == nil {
		refuseConn(c)
		s.refused++
	}
	s.f, _ = os.Open(os.DevNull)
	if s.refused > 0 && time.Since(s.logged) > 10*time.Second {
		s.log.Warn("out of file descriptors: answering new connections 503", "refused", s.refused, "limit", fileLimit())
		s.refused, s.logged = 0, time.Now()
	}
	return true
}

// errOutOfFiles is what a client reads while the daemon has no descriptor
// left for its connection.
func errOutOfFiles() error {
	limit := ""
	if n := fileLimit(); n > 0 {
		limit = "; its limit is " + strconv.FormatUint(n, 10)
	}
	return hub.Errorf("", hub.Unavailable, "the parley daemon is out of file descriptors (too many open files%s): close idle sessions and clients, or raise its limit (ulimit -n) and restart the daemon", limit)
}

// refuseConn reads c's request, so that closing it resets nothing the
// client has yet to read, answers it 503 with the API's error body, and
// closes it. Deadlines bound it: the accept loop waits meanwhile.
func refuseConn(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(200 * time.Millisecond))
	if req, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
		io.Copy(io.Discard, io.LimitReader(req.Body, 1<<20))
	}
	body, _ := json.Marshal(api.NewErrorBody(errOutOfFiles()))
	resp := &http.Response{
		StatusCode: http.StatusServiceUnavailable, ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}, "Retry-After": {"1"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Close:         true,
	}
	c.SetDeadline(time.Now().Add(time.Second))
	resp.Write(c)
}
