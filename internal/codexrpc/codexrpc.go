// Package codexrpc is the client side of the Codex app-server's JSON-RPC,
// whatever carries it: `codex app-server` on stdio, one object a line
// (internal/runner's managed agents), or the app-server daemon's WebSocket,
// one object a frame (internal/door). Messages have no "jsonrpc" member.
//
// A Conn numbers the calls, sends them through the write function it is
// given and hands each answer to its call. It does not read: its owner
// reads the transport, decodes each message (Message), hands the answers to
// the Conn (Answer), and deals with the server's requests and notifications
// itself, and with the handshake (initialize): those are its own policy.
// It imports nothing of Parley's, so that domain and wire packages alike
// may use it.
package codexrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// Error is an error answer of the app-server: it refused the call.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// Message is any message from the app-server: an answer to a call (ID, and
// Result or Error), a request of its own (ID, Method, Params), or a
// notification (Method, Params).
type Message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

// IsAnswer reports whether m answers a call.
func (m *Message) IsAnswer() bool { return m.Method == "" && len(m.ID) > 0 }

// IsRequest reports whether m is a request of the server's, which wants an
// answer (Reply, ReplyError).
func (m *Message) IsRequest() bool { return m.Method != "" && len(m.ID) > 0 }

// Options configures a Conn; nil means the defaults.
type Options struct {
	// Timeout bounds each call, its sending and the wait for its answer;
	// 0 leaves it to the call's context.
	Timeout time.Duration
	// Peer names the server in the errors of a call it refused or left
	// unanswered ("codex app-server"); empty leaves it out.
	Peer string
}

// Conn is the client side of one connection to an app-server.
type Conn struct {
	write func(ctx context.Context, msg []byte) error
	opts  Options

	mu      sync.Mutex
	next    int64
	pending map[int64]chan answer
	failure error         // why the connection ended
	done    chan struct{} // closed when it ends
}

type answer struct {
	result json.RawMessage
	err    *Error
}

// New returns a Conn that sends each message, one JSON object, with write.
// write may be called from several goroutines at once.
func New(write func(ctx context.Context, msg []byte) error, o *Options) *Conn {
	c := &Conn{write: write, pending: map[int64]chan answer{}, done: make(chan struct{})}
	if o != nil {
		c.opts = *o
	}
	return c
}

// Call sends a request and waits for its answer, which it decodes into
// result (unless nil). An error answer is an *Error in the chain.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	c.mu.Lock()
	if c.failure != nil {
		err := c.failure
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, err)
	}
	c.next++
	id := c.next
	ch := make(chan answer, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	b, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if c.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
	}
	if err := c.write(ctx, b); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case a := <-ch:
		if a.err != nil {
			if c.opts.Peer != "" {
				return fmt.Errorf("%s: %s: %w", method, c.opts.Peer, a.err)
			}
			return fmt.Errorf("%s: %w", method, a.err)
		}
		if result != nil {
			if err := json.Unmarshal(a.result, result); err != nil {
				return fmt.Errorf("%s: read the answer: %w", method, err)
			}
		}
		return nil
	case <-c.done:
		return fmt.Errorf("%s: %w", method, c.Err())
	case <-ctx.Done():
		if c.opts.Peer != "" {
			return fmt.Errorf("%s: no answer from the %s: %w", method, c.opts.Peer, ctx.Err())
		}
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// Notify sends a notification without params ("initialized").
func (c *Conn) Notify(ctx context.Context, method string) error {
	return c.send(ctx, map[string]any{"method": method})
}

// Reply answers the server's request id with result.
func (c *Conn) Reply(ctx context.Context, id json.RawMessage, result any) error {
	return c.send(ctx, map[string]any{"id": id, "result": result})
}

// ReplyError answers the server's request id with an error.
func (c *Conn) ReplyError(ctx context.Context, id json.RawMessage, code int, msg string) error {
	return c.send(ctx, map[string]any{"id": id, "error": map[string]any{"code": code, "message": msg}})
}

func (c *Conn) send(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.write(ctx, b)
}

// Answer hands m, an answer (IsAnswer), to the call waiting for it. It
// reports false when no call waits for it: an id that is not a call's, or
// one already answered or given up.
func (c *Conn) Answer(m *Message) bool {
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	if err != nil {
		return false
	}
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id) // one answer a call: the send below never blocks
	c.mu.Unlock()
	if ok {
		ch <- answer{result: m.Result, err: m.Error}
	}
	return ok
}

// Fail ends the connection (its transport is gone): the calls in flight
// and all later ones fail with err. The first failure is the one kept.
func (c *Conn) Fail(err error) {
	if err == nil {
		err = errors.New("the connection is closed")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failure == nil {
		c.failure = err
		close(c.done)
	}
}

// Done is closed when the connection has ended (Fail).
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended, or nil while it has not.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failure
}
