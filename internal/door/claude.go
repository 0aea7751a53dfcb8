package door

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
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
// A letter the session takes is queued there: it starts a turn when idle,
// or joins the next model request when busy (after the running tool call,
// which it never interrupts). A session may hold it for its person instead
// (bypassPermissions holds letters that assert no permission mode), and
// says so, and what became of it, only to a sender address in its own
// socket directory held by the writing process (Listener).
type Claude struct {
	Socket string // the session's socket path
	// Token is the session's CLAUDE_CODE_MESSAGING_TOKEN, which it gives
	// the processes it starts. Claude Code asks for it on Windows alone,
	// and takes a letter that presents it as one of its own children's:
	// so it is sent only there, where nothing gets in without it. On
	// Linux and macOS the socket's 0600 mode in a 0700 directory is the
	// check, and a letter presents nothing it is not.
	Token string
}

// sendToken reports whether the auth line goes with a letter.
var sendToken = runtime.GOOS == "windows"

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
	// Reply, if set, is this process's socket in the session's socket
	// directory: the letter names it as its sender ("from", with a msg_id of
	// its own), so that the session sends its receipts there (a letter held
	// for a person, then delivered, denied or expired; refused; dropped),
	// and asks, in the same connection, to be told there when the session
	// is next idle (notify_when_idle, answered by peer_idle_notice): for a
	// letter that starts a turn, when that turn is over. Write then returns
	// the receipts. The letter asserts nothing else of its sender: no
	// permission mode, no session.
	Reply *Listener
}

// Receipt is what a Claude Code session said of a letter, or of its own
// state, on the letter's reply socket.
type Receipt struct {
	// Status is the session's word: ReceiptHeld, ReceiptDelivered,
	// ReceiptDenied, ReceiptExpired, ReceiptRefused, ReceiptDropped (of the
	// letter, peer_message_status), or ReceiptIdle (the session is idle,
	// peer_idle_notice).
	Status string
	// Reason is the session's own words (for a drop, its drop reason).
	Reason string
	// At is when the session said it; for ReceiptIdle, when its turn ended
	// (its clock).
	At time.Time
}

// The receipts of a letter, as Claude Code 2.1.332 sends them.
const (
	ReceiptHeld      = "held"      // held for the session's person (a hold on its permission mode); a decision follows
	ReceiptDelivered = "delivered" // a held letter, approved, went to the session's queue
	ReceiptDenied    = "denied"    // the person declined it
	ReceiptExpired   = "expired"   // held, and the hold ended without approval (the session ended, its hold buffer was full)
	ReceiptRefused   = "refused"   // the session takes no cross-session letters
	ReceiptDropped   = "dropped"   // dropped at the session's inbox (rate limit, duplicate, full queue)
	ReceiptIdle      = "idle"      // the session is idle: the turn that took the letter is over
)

// Receipts is the stream of a letter's receipts. Close it when done.
type Receipts struct {
	C      <-chan Receipt // closed when the listener closes
	forget func(ids ...string)
	ids    []string
}

// Close stops the receipts: what the session says after is dropped.
func (r *Receipts) Close() {
	if r != nil && r.forget != nil {
		r.forget(r.ids...)
	}
}

// claudeTimeout bounds one letter: a connect, a few hundred bytes, and the
// session's close. The session itself drops a connection that sends no
// complete line within 30 s.
const claudeTimeout = 5 * time.Second

// Write writes the letter. It returns ErrGone (wrapped) when the session is
// gone, and with l.Reply the letter's receipts.
func (c *Claude) Write(ctx context.Context, l ClaudeLetter) (*Receipts, error) {
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
	letter := claudeFrame{Type: "user", Priority: p, Message: &claudeMessage{Role: "user", Content: l.Text}}
	var rc *Receipts
	var idle []byte
	if l.Reply != nil {
		letter.From, letter.MsgID = l.Reply.Addr(), newID()
		sub := newID()
		var err error
		if rc, err = l.Reply.expect(letter.MsgID, sub); err != nil {
			return nil, &Error{Op: op, Err: err}
		}
		idle, _ = json.Marshal(claudeFrame{Type: "control", Action: "notify_when_idle", From: l.Reply.Addr(), MsgID: sub})
	}
	b, _ := json.Marshal(letter)
	lines := append(c.auth(), b)
	if idle != nil {
		lines = append(lines, idle)
	}
	if err := c.send(ctx, lines); err != nil {
		rc.Close()
		return nil, &Error{Op: op, Kind: kindOf(err), Err: err}
	}
	return rc, nil
}

// claudeFrame is every line Parley writes to a session: a letter (user) or
// a subscription (control). Its fields are all it ever says: a sender's
// permission mode or session is never among them.
type claudeFrame struct {
	Type     string         `json:"type"`
	Action   string         `json:"action,omitempty"`
	Token    string         `json:"token,omitempty"`
	Priority Priority       `json:"priority,omitempty"`
	Message  *claudeMessage `json:"message,omitempty"`
	From     string         `json:"from,omitempty"`
	MsgID    string         `json:"msg_id,omitempty"`
}

type claudeMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// auth is the auth line, where one goes (sendToken) and the door has a
// token.
func (c *Claude) auth() [][]byte {
	if c.Token == "" || !sendToken {
		return nil
	}
	b, _ := json.Marshal(claudeFrame{Type: "auth", Token: c.Token})
	return [][]byte{b}
}

// NotifyIdle asks the session, with no letter, to tell the listener when it
// is next idle (at once if it is idle now: within a second, measured with
// 2.1.332); the receipts get one ReceiptIdle.
func (c *Claude) NotifyIdle(ctx context.Context, l *Listener) (*Receipts, error) {
	const op = "claude idle notice"
	msgID := newID()
	rc, err := l.expect(msgID)
	if err != nil {
		return nil, &Error{Op: op, Err: err}
	}
	b, _ := json.Marshal(claudeFrame{Type: "control", Action: "notify_when_idle", From: l.Addr(), MsgID: msgID})
	if err := c.send(ctx, append(c.auth(), b)); err != nil {
		rc.Close()
		return nil, &Error{Op: op, Kind: kindOf(err), Err: err}
	}
	return rc, nil
}

// send writes lines on one connection, half-closes it, and waits for the
// session to close its end: only then is the letter surely taken (a reset
// before that would lose it).
func (c *Claude) send(ctx context.Context, lines [][]byte) error {
	return sendLines(ctx, c.Socket, lines, claudeTimeout)
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

// Listener receives what Claude Code sessions say back to this process:
// the receipts of its letters and its idle notices. A session sends them to
// a socket named <pid>.sock in its own socket directory, held by the very
// process that wrote (it checks the peer's pid on both connections); so one
// process keeps one listener per directory and tells the answers apart by
// the msg_id they answer.
type Listener struct{ replies }

// replies is what the receipt listeners of every client share: the Unix
// socket that sessions answer on, and the letters (and subscriptions)
// whose answers are awaited, by the id an answer names.
type replies struct {
	ln   net.Listener
	path string

	mu      sync.Mutex
	waiters map[string]*sink
	closed  bool
}

// sink is where one letter's receipts go.
type sink struct {
	ch   chan Receipt
	ids  []string
	done bool
}

// listen opens the socket at path and serves each connection with read.
func (r *replies) listen(path string, read func(net.Conn)) error {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listen for receipts: %w", err)
	}
	r.ln, r.path, r.waiters = ln, path, map[string]*sink{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go read(c)
		}
	}()
	return nil
}

// Listen opens this process's reply socket in dir, the directory of a
// session's inbox socket. Close removes it.
func Listen(dir string) (*Listener, error) {
	path := filepath.Join(dir, strconv.Itoa(os.Getpid())+".sock")
	// A socket of this pid left by a process that died is stale: a pid is
	// ours alone while we live.
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		os.Remove(path)
	}
	l := &Listener{}
	if err := l.listen(path, l.read); err != nil {
		return nil, err
	}
	return l, nil
}

// Addr is the listener's address as a session expects it in "from".
func (l *Listener) Addr() string { return "uds:" + l.path }

// Pending counts the letters (and subscriptions) whose receipts are awaited.
func (r *replies) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := map[*sink]bool{}
	for _, s := range r.waiters {
		n[s] = true
	}
	return len(n)
}

// Close stops listening, removes the socket, and closes the channels of the
// receipts still awaited.
func (r *replies) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	for _, s := range r.waiters {
		if !s.done {
			s.done = true
			close(s.ch)
		}
	}
	clear(r.waiters)
	r.mu.Unlock()
	return r.ln.Close() // net removes a listening Unix socket's file
}

// expect registers msg ids whose answers go to one new stream.
func (r *replies) expect(ids ...string) (*Receipts, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("reply listener closed")
	}
	s := &sink{ch: make(chan Receipt, 8), ids: ids}
	for _, id := range ids {
		r.waiters[id] = s
	}
	return &Receipts{C: s.ch, forget: r.forget, ids: ids}, nil
}

func (r *replies) forget(ids ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if s, ok := r.waiters[id]; ok {
			delete(r.waiters, id)
			if !s.done {
				s.done = true
				close(s.ch)
			}
		}
	}
}

// read takes the lines of one connection (a session writes one, and a
// sibling session probing for live sockets connects and writes none).
func (l *Listener) read(c net.Conn) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(claudeTimeout))
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		var n struct {
			Type         string `json:"type"`
			Action       string `json:"action"`
			OrigMsgID    string `json:"orig_msg_id"`
			State        string `json:"state"`
			FinishedAt   int64  `json:"finished_at"`
			Status       string `json:"status"`
			StatusDetail string `json:"status_detail"`
			Reason       string `json:"reason"`
			DropReason   string `json:"drop_reason"`
		}
		if json.Unmarshal(sc.Bytes(), &n) != nil || n.Type != "control" {
			continue
		}
		r := Receipt{At: time.Now().UTC()}
		switch n.Action {
		case "peer_idle_notice":
			r.Status, r.Reason = ReceiptIdle, n.State
			if n.FinishedAt > 0 {
				r.At = time.UnixMilli(n.FinishedAt).UTC()
			}
		case "peer_message_status":
			r.Status, r.Reason = n.Status, n.Reason
			switch {
			case n.Status == ReceiptExpired && n.StatusDetail == ReceiptRefused:
				r.Status = ReceiptRefused // how 2.1.332 says it
			case n.Status == ReceiptDropped && n.DropReason != "":
				r.Reason = n.DropReason
			}
			switch r.Status {
			case ReceiptHeld, ReceiptDelivered, ReceiptDenied, ReceiptExpired, ReceiptRefused, ReceiptDropped:
			default:
				continue
			}
		default:
			continue
		}
		l.deliver(n.OrigMsgID, r)
	}
}

// deliver hands rc to the stream that awaits answers to id; an idle notice
// answers its subscription once.
func (r *replies) deliver(id string, rc Receipt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.waiters[id]
	if !ok || s.done {
		return
	}
	if rc.Status == ReceiptIdle {
		delete(r.waiters, id)
	}
	select {
	case s.ch <- rc:
	default: // a stream nobody reads: its receipts are dropped
	}
	if len(s.ids) == 1 && rc.Status == ReceiptIdle {
		// A subscription alone (NotifyIdle) is answered once.
		s.done = true
		close(s.ch)
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
