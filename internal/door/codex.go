package door

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/parley-dev/parley/internal/codexrpc"
)

// Codex is one thread of a Codex session (0.171 and later), reached through
// the app-server daemon that the interactive codex runs on: a WebSocket on
// the Unix socket $CODEX_HOME/app-server-control/app-server-control.sock,
// path /rpc, carrying one JSON-RPC message per text frame (without the
// "jsonrpc" field), with the experimental API on.
//
// thread/queue/add (what `codex queue` calls) starts a turn at once in an
// idle thread, and holds the text for a busy one until its turn ends, as a
// turn of its own; the queue is the daemon's, per CODEX_HOME. turn/steer
// adds the text to the turn in progress.
type Codex struct {
	Home   string // CODEX_HOME of the session (default ~/.codex)
	Thread string // the thread id
	// ClientName names Parley to the app-server (initialize's clientInfo).
	ClientName, ClientVersion string
	// Resume lets Queue resume a thread that the app-server has not
	// loaded (thread/resume): the app-server then runs the letter's turn
	// itself, headless, where no window may show it. Without it such a
	// letter is not queued (ErrNotLoaded).
	Resume bool
}

// ControlSocket is where the app-server daemon of a CODEX_HOME listens.
func ControlSocket(codexHome string) string {
	return filepath.Join(codexHome, "app-server-control", "app-server-control.sock")
}

// codexTimeout bounds one request to the app-server.
const codexTimeout = 10 * time.Second

// Queued is a letter in a thread's queue.
type Queued struct {
	ID string // the queued submission's id, as `codex queue` prints it
	// Resumed says Queue resumed the thread to queue the letter.
	Resumed bool

	c      *codexConn
	thread string
	client string // the clientUserMessageId the letter went with
}

// Queue adds a letter to the thread's queue. Keep the result to learn when
// a turn starts with it (Started), and Close it.
func (c *Codex) Queue(ctx context.Context, text string) (*Queued, error) {
	const op = "codex queue"
	if err := c.check(text); err != nil {
		return nil, &Error{Op: op, Err: err}
	}
	cc, err := c.dial(ctx)
	if err != nil {
		return nil, codexErr(op, err)
	}
	// A thread the app-server has not loaded keeps what is queued for it
	// until some client resumes it: the letter would wait unseen, and a
	// `codex exec` thread's may be lost (openai/codex#44491, #41060).
	st, err := cc.status(ctx, c.Thread)
	if err != nil {
		cc.close()
		return nil, codexErr(op, err)
	}
	resumed := false
	if st == "notLoaded" {
		if !c.Resume {
			cc.close()
			return nil, &Error{Op: op, Kind: ErrNotLoaded, Err: fmt.Errorf("thread %s is not loaded on the app-server of %s", c.Thread, c.Home)}
		}
		if err := cc.rpc.Call(ctx, "thread/resume", map[string]any{"threadId": c.Thread, "excludeTurns": true}, nil); err != nil {
			cc.close()
			return nil, codexErr("codex resume", err)
		}
		resumed = true
	}
	var res struct {
		QueuedSubmission struct {
			ID string `json:"id"`
		} `json:"queuedSubmission"`
	}
	client := newID()
	err = cc.rpc.Call(ctx, "thread/queue/add", map[string]any{"threadId": c.Thread, "clientUserMessageId": client,
		"input": []any{textInput(text)}}, &res)
	if err != nil {
		cc.close()
		return nil, codexErr(op, err)
	}
	if res.QueuedSubmission.ID == "" {
		cc.close()
		return nil, &Error{Op: op, Err: errors.New("no queued submission id in the answer")}
	}
	return &Queued{ID: res.QueuedSubmission.ID, Resumed: resumed, c: cc, thread: c.Thread, client: client}, nil
}

// carriedWithin bounds how long after a letter left the queue a turn that
// carries it may take to show it.
const carriedWithin = 10 * time.Second

// Started waits until a turn started with the letter: it left the thread's
// queue, and one of the thread's turns holds it (the user message the
// queue added, by its client id). A letter that left the queue and that no
// turn shows within carriedWithin was dropped (ErrDropped).
func (q *Queued) Started(ctx context.Context) error {
	const op = "codex queue"
	var left time.Time // when the letter was first seen out of the queue
	for {
		ch := q.c.queueChanged()
		in, err := q.inQueue(ctx)
		if err != nil {
			return codexErr(op, err)
		}
		if !in {
			carried, err := q.carried(ctx)
			if err != nil {
				return codexErr(op, err)
			}
			if carried {
				return nil
			}
			if left.IsZero() {
				left = time.Now()
			} else if time.Since(left) > carriedWithin {
				return &Error{Op: op, Kind: ErrDropped, Err: fmt.Errorf("submission %s left the queue of thread %s and no turn carries it", q.ID, q.thread)}
			}
		}
		// The daemon announces changes of the thread's status (and of
		// its queue); a slow poll covers a notice that never comes.
		wait := 5 * time.Second
		if !left.IsZero() {
			wait = 200 * time.Millisecond // the turn's record is on its way, or never comes
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-q.c.rpc.Done():
			t.Stop()
			return &Error{Op: op, Kind: ErrGone, Err: q.c.rpc.Err()}
		case <-ch:
		case <-t.C:
		}
		t.Stop()
	}
}

// carried reports whether one of the thread's latest turns holds the
// letter's user message.
func (q *Queued) carried(ctx context.Context) (bool, error) {
	var res struct {
		Data []struct {
			Items []struct {
				Type     string `json:"type"`
				ClientID string `json:"clientId"`
			} `json:"items"`
		} `json:"data"`
	}
	if err := q.c.rpc.Call(ctx, "thread/turns/list", map[string]any{"threadId": q.thread, "limit": 3, "itemsView": "full"}, &res); err != nil {
		return false, err
	}
	for _, t := range res.Data {
		for _, it := range t.Items {
			if it.Type == "userMessage" && it.ClientID == q.client {
				return true, nil
			}
		}
	}
	return false, nil
}

func (q *Queued) inQueue(ctx context.Context) (bool, error) {
	var cursor *string
	for {
		var res struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
			NextCursor *string `json:"nextCursor"`
		}
		params := map[string]any{"threadId": q.thread}
		if cursor != nil {
			params["cursor"] = *cursor
		}
		if err := q.c.rpc.Call(ctx, "thread/queue/list", params, &res); err != nil {
			return false, err
		}
		for _, s := range res.Data {
			if s.ID == q.ID {
				return true, nil
			}
		}
		if res.NextCursor == nil || *res.NextCursor == "" {
			return false, nil
		}
		cursor = res.NextCursor
	}
}

// Close ends the connection behind the letter; the letter stays queued.
func (q *Queued) Close() { q.c.close() }

// Steer adds the letter to the thread's turn in progress (turn/steer),
// which its next model request carries. It returns false, having written
// nothing, when no turn is in progress.
func (c *Codex) Steer(ctx context.Context, text string) (bool, error) {
	const op = "codex steer"
	if err := c.check(text); err != nil {
		return false, &Error{Op: op, Err: err}
	}
	cc, err := c.dial(ctx)
	if err != nil {
		return false, codexErr(op, err)
	}
	defer cc.close()
	var turns struct {
		Data []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"data"`
	}
	if err := cc.rpc.Call(ctx, "thread/turns/list", map[string]any{"threadId": c.Thread, "limit": 1}, &turns); err != nil {
		return false, codexErr(op, err)
	}
	if len(turns.Data) == 0 || turns.Data[0].Status != "inProgress" {
		return false, nil
	}
	err = cc.rpc.Call(ctx, "turn/steer", map[string]any{"threadId": c.Thread, "expectedTurnId": turns.Data[0].ID,
		"clientUserMessageId": newID(), "input": []any{textInput(text)}}, nil)
	if err != nil {
		var re *codexrpc.Error
		if errors.As(err, &re) {
			return false, nil // the turn ended meanwhile
		}
		return false, codexErr(op, err)
	}
	return true, nil
}

func (c *Codex) check(text string) error {
	switch {
	case c.Thread == "":
		return errors.New("no thread id")
	case c.Home == "":
		return errors.New("no CODEX_HOME")
	case text == "":
		return errors.New("empty letter")
	case len(text) > MaxText:
		return fmt.Errorf("letter is %d bytes; at most %d", len(text), MaxText)
	}
	return nil
}

func textInput(text string) map[string]any {
	return map[string]any{"type": "text", "text": text, "text_elements": []any{}}
}

// codexErr is the door's error of op; an error answer of the app-server
// is the client's refusal.
func codexErr(op string, err error) *Error {
	if errors.As(err, new(*codexrpc.Error)) {
		return &Error{Op: op, Kind: ErrRefused, Err: refusal{err}}
	}
	return &Error{Op: op, Kind: kindOf(err), Err: err}
}

// refusal is an error answer of the app-server, in the words it gave.
type refusal struct{ err error }

func (r refusal) Error() string      { return r.err.Error() }
func (r refusal) Unwrap() error      { return r.err }
func (refusal) Is(target error) bool { return target == ErrRefused }

// codexConn is one initialized connection to an app-server.
type codexConn struct {
	ws  *websocket.Conn
	rpc *codexrpc.Conn

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when a thread's queue or status changes
}

// dial connects to the app-server of c.Home and initializes the connection.
func (c *Codex) dial(ctx context.Context) (*codexConn, error) {
	sock := ControlSocket(c.Home)
	// The path is a symlink into a short directory of the daemon's; a long
	// CODEX_HOME would not fit in a socket address, its target does.
	if t, err := filepath.EvalSymlinks(sock); err == nil {
		sock = t
	} else if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no app-server at %s: %w", sock, err)
	}
	ctx, cancel := context.WithTimeout(ctx, codexTimeout)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dialUnix(ctx, sock)
	}}}
	ws, _, err := websocket.Dial(ctx, "ws://localhost/rpc", &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		return nil, fmt.Errorf("connect to the app-server: %w", err)
	}
	ws.SetReadLimit(16 << 20) // thread lists and notifications can be large
	cc := &codexConn{ws: ws, changed: make(chan struct{})}
	cc.rpc = codexrpc.New(func(ctx context.Context, msg []byte) error { return ws.Write(ctx, websocket.MessageText, msg) },
		&codexrpc.Options{Timeout: codexTimeout})
	go cc.read()
	name, version := c.ClientName, c.ClientVersion
	if name == "" {
		name = "parley"
	}
	if version == "" {
		version = "dev"
	}
	err = cc.rpc.Call(ctx, "initialize", map[string]any{"clientInfo": map[string]string{"name": name, "version": version},
		"capabilities": map[string]any{"experimentalApi": true}}, nil)
	if err == nil {
		err = cc.rpc.Notify(ctx, "initialized")
	}
	if err != nil {
		cc.close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return cc, nil
}

// read dispatches answers to their calls and notes queue changes.
func (cc *codexConn) read() {
	for {
		_, b, err := cc.ws.Read(context.Background())
		if err != nil {
			cc.rpc.Fail(fmt.Errorf("app-server connection: %w", err))
			return
		}
		var m codexrpc.Message
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		switch {
		case m.IsAnswer():
			cc.rpc.Answer(&m)
		case m.IsRequest():
			// A request of the server's (an approval): not ours to
			// answer; the session's own client does.
		case m.Method == "thread/queue/changed" || m.Method == "thread/status/changed":
			// A thread that goes idle or active may have taken a
			// queued submission (the daemon does not announce that as a
			// queue change to every client).
			cc.mu.Lock()
			close(cc.changed)
			cc.changed = make(chan struct{})
			cc.mu.Unlock()
		}
	}
}

func (cc *codexConn) queueChanged() <-chan struct{} {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.changed
}

func (cc *codexConn) close() {
	cc.rpc.Fail(errors.New("app-server connection closed"))
	cc.ws.Close(websocket.StatusNormalClosure, "")
}

// Home is the CODEX_HOME a Codex started with this environment uses:
// $CODEX_HOME, else ~/.codex. getenv is os.Getenv or a stand-in.
func Home(getenv func(string) string) string {
	if h := getenv("CODEX_HOME"); h != "" {
		return h
	}
	home := getenv("HOME")
	if home == "" {
		home = getenv("USERPROFILE")
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".codex")
}

// status is the thread's status on the app-server.
func (cc *codexConn) status(ctx context.Context, thread string) (string, error) {
	var res struct {
		Thread struct {
			Status struct {
				Type string `json:"type"`
			} `json:"status"`
		} `json:"thread"`
	}
	if err := cc.rpc.Call(ctx, "thread/read", map[string]any{"threadId": thread, "includeTurns": false}, &res); err != nil {
		return "", err
	}
	return res.Thread.Status.Type, nil
}

// Status is the thread's status on its app-server: "idle", "active" (a turn
// runs), "notLoaded" or "systemError".
func (c *Codex) Status(ctx context.Context) (string, error) {
	const op = "codex status"
	if c.Thread == "" || c.Home == "" {
		return "", &Error{Op: op, Err: errors.New("no thread or no CODEX_HOME")}
	}
	cc, err := c.dial(ctx)
	if err != nil {
		return "", codexErr(op, err)
	}
	defer cc.close()
	st, err := cc.status(ctx, c.Thread)
	if err != nil {
		return "", codexErr(op, err)
	}
	return st, nil
}
