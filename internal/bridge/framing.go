package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// line is one line read from the client.
type line struct {
	data    []byte // owned; without the line terminator and surrounding space
	tooLong bool   // the line exceeded maxLine and was discarded
}

// readLines sends each non-blank line of in to lines, then closes lines and
// reports the read error (nil at EOF) on errc. It stops early when ctx is done.
func readLines(ctx context.Context, in io.Reader, lines chan<- line, errc chan<- error) {
	lr := newLineReader(in, maxLine)
	for {
		l, err := lr.next()
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			errc <- err
			close(lines)
			return
		}
		select {
		case lines <- l:
		case <-ctx.Done():
			errc <- nil
			close(lines)
			return
		}
	}
}

// lineReader splits a stream into lines of at most max bytes.
type lineReader struct {
	r   *bufio.Reader
	max int
	err error // sticky, returned after the last line
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next non-blank line, io.EOF at the end of the input, or a
// read error. A final line without a newline still counts.
func (lr *lineReader) next() (line, error) {
	for lr.err == nil {
		var acc []byte
		tooLong := false
		for {
			frag, err := lr.r.ReadSlice('\n')
			if err != nil && err != bufio.ErrBufferFull {
				lr.err = err
			}
			if !tooLong {
				if len(acc)+len(frag) > lr.max+2 { // +2: the terminator is not content
					tooLong, acc = true, nil
				} else if err == nil && acc == nil {
					// The common case: the whole line is in the buffer; copy it
					// once, trimmed.
					acc = frag
					break
				} else {
					acc = append(acc, frag...)
				}
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if tooLong {
			return line{tooLong: true}, nil
		}
		if b := bytes.TrimSpace(acc); len(b) > 0 {
			return line{data: bytes.Clone(b)}, nil
		}
	}
	return line{}, lr.err
}

// envelope is the part of a JSON-RPC message the bridge needs: enough to tell
// requests, notifications and responses apart and to match responses to
// requests. The rest of the message is passed on untouched.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// message is one parsed line from the client.
type message struct {
	raw    []byte
	method string            // of the message, or of a batch's first element
	ids    []json.RawMessage // ids of the requests in it, which expect answers
	batch  bool
	isInit bool
}

// parseMessage classifies a line from the client. On error it returns the
// JSON-RPC error code to answer with.
func parseMessage(raw []byte) (*message, int, error) {
	m := &message{raw: raw}
	if raw[0] == '[' {
		var batch []envelope
		if err := json.Unmarshal(raw, &batch); err != nil {
			return nil, decodeCode(err), decodeErr(err)
		}
		if len(batch) == 0 {
			return nil, codeInvalidRequest, errors.New("invalid request: empty batch")
		}
		m.batch = true
		m.method = batch[0].Method
		for _, e := range batch {
			if e.Method != "" && isID(e.ID) {
				m.ids = append(m.ids, e.ID)
			}
		}
		return m, 0, nil
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, decodeCode(err), decodeErr(err)
	}
	// Answer an invalid envelope here, with its id where it has one: the
	// server would only refuse it with an HTTP error, or not answer at all.
	switch {
	case env.JSONRPC != "2.0":
		return &message{raw: raw, ids: idOf(env.ID)}, codeInvalidRequest, fmt.Errorf("invalid request: jsonrpc must be \"2.0\", got %q", env.JSONRPC)
	case env.Method == "" && len(env.Result) == 0 && len(env.Error) == 0:
		return &message{raw: raw, ids: idOf(env.ID)}, codeInvalidRequest, errors.New("invalid request: no method, result or error")
	}
	m.method = env.Method
	if env.Method != "" && isID(env.ID) {
		m.ids = []json.RawMessage{env.ID}
		m.isInit = env.Method == "initialize"
	}
	return m, 0, nil
}

func decodeCode(err error) int {
	var se *json.SyntaxError
	if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) {
		return codeParseError
	}
	return codeInvalidRequest
}

func decodeErr(err error) error {
	if decodeCode(err) == codeParseError {
		return fmt.Errorf("parse error: %w", err)
	}
	return fmt.Errorf("invalid request: %w", err)
}

// idOf returns the id as a list of one, or none for a notification.
func idOf(id json.RawMessage) []json.RawMessage {
	if !isID(id) {
		return nil
	}
	return []json.RawMessage{id}
}

// isID reports whether a request carries an id, so expects a response.
func isID(id json.RawMessage) bool {
	return len(id) > 0 && string(id) != "null"
}

// idKey returns a canonical form of a JSON-RPC id, so that a response matches
// its request even if the server re-encoded the id ("\u0061" for "a", 1.0 for 1).
func idKey(id json.RawMessage) string {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return ""
	}
	if id[0] == '"' {
		if bytes.IndexByte(id, '\\') < 0 {
			return string(id)
		}
		var s string
		if json.Unmarshal(id, &s) == nil {
			return strconv.Quote(s)
		}
		return string(id)
	}
	if bytes.ContainsAny(id, ".eE") {
		if f, err := strconv.ParseFloat(string(id), 64); err == nil {
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
	}
	return string(id)
}
