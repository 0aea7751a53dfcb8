package bridge

import (
	"bufio"
	"bytes"
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
	method string
	id     json.RawMessage // of a request, which expects an answer; nil otherwise
	isInit bool
}

// parseMessage classifies a line from the client. On error it returns the
// JSON-RPC error code to answer with (and the message, for its id).
func parseMessage(raw []byte) (*message, int, error) {
	if raw[0] == '[' {
		if !json.Valid(raw) {
			return nil, codeParseError, errors.New("parse error: the line is not valid JSON")
		}
		return nil, codeInvalidRequest, errors.New("invalid request: MCP has no JSON-RPC batches since 2025-06-18; send one message a line")
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, codeParseError, fmt.Errorf("parse error: %w", err)
		}
		return nil, codeInvalidRequest, fmt.Errorf("invalid request: %w", err)
	}
	m := &message{raw: raw, method: env.Method}
	if isID(env.ID) {
		m.id = env.ID
	}
	// Answer an invalid envelope here, with its id where it has one: the
	// server would only refuse it with an HTTP error, or not answer at all.
	switch {
	case env.JSONRPC != "2.0":
		return m, codeInvalidRequest, fmt.Errorf("invalid request: jsonrpc must be \"2.0\", got %q", env.JSONRPC)
	case env.Method == "" && len(env.Result) == 0 && len(env.Error) == 0:
		return m, codeInvalidRequest, errors.New("invalid request: no method, result or error")
	}
	if env.Method == "" {
		m.id = nil // a response to the server: nothing answers it
	}
	m.isInit = m.id != nil && env.Method == "initialize"
	return m, 0, nil
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
