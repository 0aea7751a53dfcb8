package door

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Claude is the inbox socket of one Claude Code session (2.1.224 and later):
// the CLAUDE_CODE_MESSAGING_SOCKET and CLAUDE_CODE_MESSAGING_TOKEN that the
// session hands the MCP servers, hooks and commands it starts.
//
// The wire: a Unix stream connection carries an optional auth line, one
// letter {"type":"user","message":{"role":"user","content":TEXT}} and
// optional control lines, each a JSON object on its own line; the writer
// then half-closes, and the session closes without writing anything back.
// There is no acknowledgement: a written letter is queued in the session,
// which starts a turn with it when idle, or adds it to its next model
// request when busy (after the running tool call, which it never
// interrupts).
type Claude struct {
	Socket string // the session's socket path
	// Token is sent in an auth line first. Claude Code checks it only on
	// Windows (on Linux and macOS the socket's 0600 mode in a 0700
	// directory is the check), but sending it costs nothing.
	Token string
}

// Priority is where a Claude Code session puts a letter that comes while it
// works: "next" (the default) as a message of its own in the next model
// request, "now" beside the running tool call's result. Neither interrupts
// a tool call.
type Priority string

// The priorities.
const (
	PriorityNext Priority = "next"
	PriorityNow  Priority = "now"
)

// ClaudeLetter is one letter for a Claude Code session.
type ClaudeLetter struct {
	Text     string
	Priority Priority // "" means PriorityNext
	// Idle, if set, asks the session in the same connection to tell the
	// listener when it is next idle, that is when the turn that took the
	// letter is over (notify_when_idle, answered by peer_idle_notice):
	// Write then returns the channel that gets the notice.
	Idle *IdleListener
}

// claudeTimeout bounds one letter: a connect, a few hundred bytes, and the
// session's close. The session itself drops a connection that sends no
// complete line within 30 s.
const claudeTimeout = 5 * time.Second

// Write writes the letter. It returns ErrGone (wrapped) when the session is
// gone, and with l.Idle the channel on which the idle notice comes (closed
// without one if the listener closes first).
func (c *Claude) Write(ctx context.Context, l ClaudeLetter) (<-chan IdleNotice, error) {
	const op = "claude inbox"
	if l.Text == "" {
		return nil, &Error{Op: op, Err: errors.New("empty letter")}
	}
	if len(l.Text) > MaxText {
		return nil, &Error{Op: op, Err: fmt.Errorf("letter is %d bytes; at most %d", len(l.Text), MaxText)}
	}
	p := l.Priority
	if p == "" {
		p = PriorityNext
	}
	if p != PriorityNext && p != PriorityNow {
		return nil, &Error{Op: op, Err: fmt.Errorf("invalid priority %q: want next or now", p)}
	}
	var lines [][]byte
	if c.Token != "" {
		b, _ := json.Marshal(map[string]string{"type": "auth", "token": c.Token})
		lines = append(lines, b)
	}
	b, _ := json.Marshal(map[string]any{"type": "user", "priority": p,
		"message": map[string]string{"role": "user", "content": l.Text}})
	lines = append(lines, b)
	var notice <-chan IdleNotice
	var msgID string
	if l.Idle != nil {
		msgID = newID()
		ch, err := l.Idle.expect(msgID)
		if err != nil {
			return nil, &Error{Op: op, Err: err}
		}
		notice = ch
		b, _ := json.Marshal(map[string]string{"type": "control", "action": "notify_when_idle", "from": l.Idle.Addr(), "msg_id": msgID})
		lines = append(lines, b)
	}
	err := c.send(ctx, lines)
	if err != nil {
		if msgID != "" {
			l.Idle.forget(msgID)
		}
		return nil, &Error{Op: op, Kind: kindOf(err), Err: err}
	}
	return notice, nil
}

// NotifyIdle asks the session, with no letter, to tell the listener when it
// is next idle (at once if it is idle now: within a second, measured with
// 2.1.332), and returns the channel that gets the notice.
func (c *Claude) NotifyIdle(ctx context.Context, l *IdleListener) (<-chan IdleNotice, error) {
	const op = "claude idle notice"
	msgID := newID()
	ch, err := l.expect(msgID)
	if err != nil {
		return nil, &Error{Op: op, Err: err}
	}
	b, _ := json.Marshal(map[string]string{"type": "control", "action": "notify_when_idle", "from": l.Addr(), "msg_id": msgID})
	lines := [][]byte{b}
	if c.Token != "" {
		a, _ := json.Marshal(map[string]string{"type": "auth", "token": c.Token})
		lines = append([][]byte{a}, lines...)
	}
	if err := c.send(ctx, lines); err != nil {
		l.forget(msgID)
		return nil, &Error{Op: op, Kind: kindOf(err), Err: err}
	}
	return ch, nil
}

// send writes lines on one connection, half-closes it, and waits for the
// session to close its end.
func (c *Claude) send(ctx context.Context, lines [][]byte) error {
	ctx, cancel := context.WithTimeout(ctx, claudeTimeout)
	defer cancel()
	conn, err := dialUnix(ctx, c.Socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	w := bufio.NewWriter(conn)
	for _, l := range lines {
		w.Write(l)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if uc, ok := conn.(*net.UnixConn); ok {
		if err := uc.CloseWrite(); err != nil {
			return fmt.Errorf("half-close: %w", err)
		}
	}
	// The session reads to our EOF, then closes: only then is the letter
	// surely taken (a reset before that would lose it).
	if _, err := io.Copy(io.Discard, conn); err != nil {
		return fmt.Errorf("wait for the session to close: %w", err)
	}
	return nil
}

func dialUnix(ctx context.Context, path string) (net.Conn, error) {
	if path == "" {
		return nil, errors.New("no socket path")
	}
	if err := checkSocket(path); err != nil { // owner_unix.go
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	if err := checkPeer(conn); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// kindOf classifies an error: a missing socket or one nobody listens on
// means the session is gone; an error answer, a refusal.
func kindOf(err error) error {
	switch {
	case errors.Is(err, ErrRefused):
		return ErrRefused
	case errors.Is(err, os.ErrNotExist) || isConnRefused(err):
		return ErrGone
	}
	return nil
}

// IdleNotice is a Claude Code session's peer_idle_notice: the turn that took
// the letter is over, and the session waits for input.
type IdleNotice struct {
	State      string    // "idle"
	FinishedAt time.Time // when the turn ended, by the session's clock
}

// IdleListener receives Claude Code's idle notices. A session sends them to
// a socket named <pid>.sock in its own socket directory, held by the very
// process that subscribed (it checks the peer's pid on both connections);
// so one process keeps one listener per directory and tells the notices
// apart by the subscription they answer.
type IdleListener struct {
	ln   net.Listener
	path string

	mu      sync.Mutex
	waiters map[string]chan IdleNotice
	closed  bool
}

// ListenIdle opens this process's idle-notice socket in dir, the directory
// of a session's inbox socket. Close removes it.
func ListenIdle(dir string) (*IdleListener, error) {
	path := filepath.Join(dir, strconv.Itoa(os.Getpid())+".sock")
	// A socket of this pid left by a process that died is stale: a pid is
	// ours alone while we live.
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		os.Remove(path)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen for idle notices: %w", err)
	}
	l := &IdleListener{ln: ln, path: path, waiters: map[string]chan IdleNotice{}}
	go l.serve()
	return l, nil
}

// Addr is the listener's address as a session expects it in "from".
func (l *IdleListener) Addr() string { return "uds:" + l.path }

// Pending counts the subscriptions not answered yet.
func (l *IdleListener) Pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiters)
}

// Close stops listening, removes the socket, and closes the channels of the
// notices still awaited.
func (l *IdleListener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	for id, ch := range l.waiters {
		close(ch)
		delete(l.waiters, id)
	}
	l.mu.Unlock()
	return l.ln.Close() // net removes a listening Unix socket's file
}

func (l *IdleListener) expect(msgID string) (<-chan IdleNotice, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errors.New("idle listener closed")
	}
	ch := make(chan IdleNotice, 1)
	l.waiters[msgID] = ch
	return ch, nil
}

func (l *IdleListener) forget(msgID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ch, ok := l.waiters[msgID]; ok {
		close(ch)
		delete(l.waiters, msgID)
	}
}

func (l *IdleListener) serve() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		go l.read(c)
	}
}

// read takes the notice lines of one connection (a session writes one, and
// a sibling session probing for live sockets connects and writes none).
func (l *IdleListener) read(c net.Conn) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(claudeTimeout))
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		var n struct {
			Type       string `json:"type"`
			Action     string `json:"action"`
			OrigMsgID  string `json:"orig_msg_id"`
			State      string `json:"state"`
			FinishedAt int64  `json:"finished_at"`
		}
		if json.Unmarshal(sc.Bytes(), &n) != nil || n.Type != "control" || n.Action != "peer_idle_notice" {
			continue
		}
		l.mu.Lock()
		ch, ok := l.waiters[n.OrigMsgID]
		delete(l.waiters, n.OrigMsgID)
		l.mu.Unlock()
		if ok {
			ch <- IdleNotice{State: n.State, FinishedAt: time.UnixMilli(n.FinishedAt).UTC()}
			close(ch)
		}
	}
}

// newID is a random UUID (version 4), the shape Claude Code gives msg_id.
func newID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
