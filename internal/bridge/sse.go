package bridge

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// sseReader parses a text/event-stream as the WHATWG HTML spec describes
// ("Interpreting an event stream"): fields data, event, id and retry; comment
// lines starting with ':'; events ended by a blank line; lines ended by LF or
// CRLF. It yields the data of message events; other event types (such as the
// "close" event of SEP-1699) carry no JSON-RPC message and are skipped.
type sseReader struct {
	r       *bufio.Reader
	max     int
	data    []byte // the event being read; reused across events
	event   []byte
	hasData bool
	lastID  string
	retry   time.Duration
}

var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

func newSSEReader(r io.Reader) *sseReader {
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(r)
	return &sseReader{r: br, max: maxEvent}
}

// release returns the buffer to the pool; the reader is unusable afterwards.
func (s *sseReader) release() {
	s.r.Reset(nil)
	readerPool.Put(s.r)
	s.r = nil
}

var errEventTooLarge = errors.New("server-sent event too large")

// next returns the data of the next message event, valid until the next call,
// or io.EOF at a clean end of the stream. An event cut off by the end of the
// stream is dropped, as the spec says.
func (s *sseReader) next() ([]byte, error) {
	s.data = s.data[:0]
	s.event = s.event[:0]
	s.hasData = false
	size := 0
	for {
		ln, err := s.readLine()
		if err != nil {
			// An event cut off by the end of the stream was never dispatched.
			return nil, err
		}
		size += len(ln)
		if size > s.max {
			return nil, fmt.Errorf("%w (over %d bytes)", errEventTooLarge, s.max)
		}
		if len(ln) == 0 {
			// Dispatch. Events with no data (priming events that only carry an
			// id, keep-alives) and events that are not messages are skipped.
			if s.hasData && (len(s.event) == 0 || string(s.event) == "message") {
				return s.data, nil
			}
			s.data = s.data[:0]
			s.event = s.event[:0]
			s.hasData = false
			size = 0
			continue
		}
		if ln[0] == ':' {
			continue // comment
		}
		field, value := ln, []byte(nil)
		if i := bytes.IndexByte(ln, ':'); i >= 0 {
			field, value = ln[:i], ln[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if s.hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			s.hasData = true
		case "event":
			s.event = append(s.event[:0], value...)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				s.lastID = string(value)
			}
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil {
				s.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}

// readLine returns the next line without its terminator, valid until the next
// call. Lines longer than the buffer are assembled in a separate slice.
func (s *sseReader) readLine() ([]byte, error) {
	frag, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// A long line: assemble it, bounded by max.
		acc := append([]byte(nil), frag...)
		for err == bufio.ErrBufferFull {
			if len(acc) > s.max {
				return nil, fmt.Errorf("%w (over %d bytes)", errEventTooLarge, s.max)
			}
			frag, err = s.r.ReadSlice('\n')
			acc = append(acc, frag...)
		}
		frag = acc
	}
	if err != nil {
		if err == io.EOF && len(frag) > 0 {
			return frag, io.EOF
		}
		return nil, err
	}
	frag = frag[:len(frag)-1]
	if n := len(frag); n > 0 && frag[n-1] == '\r' {
		frag = frag[:n-1]
	}
	return frag, nil
}
