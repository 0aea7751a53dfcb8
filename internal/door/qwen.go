package door

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Qwen is one Qwen Code session (0.24 and later), reached through its
// cross-session protocol (schema and frame version 1, Qwen Code's
// docs/features/cross-session-protocol.md): the session publishes a record
// $QWEN_HOME/sessions/<pid>.json naming its inbox socket (ipcPath) and the
// token a peer presents (ipcToken); a letter is one connection carrying an
// auth line and a user frame, after which the writer half-closes and the
// session closes without writing anything back. What became of the letter
// comes back, as delivery_status frames, on connections to the sender's
// own inbox (QwenListener), authenticated with the replyToken the letter
// gave: held (for the session's person, /peers), delivered (queued for the
// model: not yet read), denied, refused, expired, misaddressed, dropped.
//
// A letter presents the record's ipcToken, the token of any peer, and
// asserts no review class (fromMode): under Qwen Code's default policy it
// is held for the person; `agents.crossSessionInbound: "accept"` in the
// user's settings lets it in (a workspace may only tighten the setting).
// It never presents the session's child token (QWEN_CODE_MESSAGING_TOKEN),
// which would make it one of the session's own processes: the daemon is
// not.
type Qwen struct {
	// Record is the path of the session's registry record, read again
	// before each letter (/clear and /resume change the session id under
	// the same process).
	Record string
}

// QwenRecord is what a Qwen Code session publishes of itself.
type QwenRecord struct {
	SchemaVersion int    `json:"schemaVersion"`
	PID           int    `json:"pid"`
	SessionID     string `json:"sessionId"`
	Cwd           string `json:"cwd"`
	Name          string `json:"name"`
	Version       string `json:"qwenVersion"`
	Kind          string `json:"kind"`
	IPCPath       string `json:"ipcPath"`
	IPCToken      string `json:"ipcToken"`
}

// EnvQwen* are what a Qwen Code session gives the processes it starts (its
// MCP servers among them): its inbox, its child token, its session id and
// its project directory.
const (
	EnvQwenSocket  = "QWEN_CODE_MESSAGING_SOCKET"
	EnvQwenToken   = "QWEN_CODE_MESSAGING_TOKEN"
	EnvQwenSession = "QWEN_CODE_SESSION_ID"
)

// QwenHome is the QWEN_HOME a Qwen Code started with this environment
// uses: $QWEN_HOME, else ~/.qwen. getenv is os.Getenv or a stand-in.
func QwenHome(getenv func(string) string) string {
	if h := getenv("QWEN_HOME"); h != "" {
		if strings.HasPrefix(h, "~/") {
			h = filepath.Join(getenv("HOME"), h[2:])
		}
		if abs, err := filepath.Abs(h); err == nil {
			return abs
		}
		return h
	}
	home := getenv("HOME")
	if home == "" {
		home = getenv("USERPROFILE")
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".qwen")
}

// FindQwenRecord finds the record of the session whose inbox is socket in
// qwenHome's registry (the session that started this process gives it its
// socket in QWEN_CODE_MESSAGING_SOCKET). It prefers the record of pid (the
// parent process) and reads the others only when that one does not match.
func FindQwenRecord(qwenHome, socket string, pid int) (string, *QwenRecord, error) {
	dir := filepath.Join(qwenHome, "sessions")
	try := func(p string) (*QwenRecord, bool) {
		r, err := ReadQwenRecord(p)
		return r, err == nil && r.IPCPath == socket
	}
	if pid > 0 {
		p := filepath.Join(dir, strconv.Itoa(pid)+".json")
		if r, ok := try(p); ok {
			return p, r, nil
		}
	}
	ms, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, p := range ms {
		if r, ok := try(p); ok {
			return p, r, nil
		}
	}
	return "", nil, fmt.Errorf("no session record in %s names the inbox %s", dir, socket)
}

// maxQwenRecord bounds a record's size.
const maxQwenRecord = 64 << 10

// ReadQwenRecord reads a session's record. A missing record, or one that
// names no inbox (the session is shutting down), is ErrGone; a record of
// a newer schema, or whose pid is not its file's, is refused.
func ReadQwenRecord(path string) (*QwenRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: no session record %s", ErrGone, path)
		}
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxQwenRecord+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxQwenRecord {
		return nil, fmt.Errorf("%w: session record %s is over %d bytes", ErrRefused, path, maxQwenRecord)
	}
	var r QwenRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("session record %s: %w", path, err)
	}
	base := strings.TrimSuffix(filepath.Base(path), ".json")
	if i := strings.IndexByte(base, '-'); i > 0 {
		base = base[:i]
	}
	switch {
	case r.SchemaVersion != 1:
		return nil, fmt.Errorf("%w: session record %s has schema version %d; Parley reads version 1", ErrRefused, path, r.SchemaVersion)
	case strconv.Itoa(r.PID) != base:
		return nil, fmt.Errorf("%w: session record %s names pid %d, not its file's", ErrRefused, path, r.PID)
	case r.IPCPath == "":
		return nil, fmt.Errorf("%w: session record %s names no inbox (the session is ending)", ErrGone, path)
	case r.SessionID == "":
		return nil, fmt.Errorf("session record %s names no session", path)
	}
	return &r, nil
}

// The receipts of a Qwen Code session (delivery_status), besides those it
// shares with Claude Code (ReceiptHeld, ReceiptDelivered, ReceiptDenied,
// ReceiptRefused, ReceiptExpired, ReceiptDropped).
const (
	// ReceiptMisaddressed: the session at the address is another one now.
	ReceiptMisaddressed = "misaddressed"
)

// QwenLetter is one letter for a Qwen Code session.
type QwenLetter struct {
	Text string
	// Reply, if set, is where the session sends the letter's receipts.
	Reply *QwenListener
}

// QwenSent is a letter the session took: its id, the session it went to,
// and its receipts (nil without a Reply).
type QwenSent struct {
	MsgID   string
	Session string    // the session id the letter was addressed to
	Receipt *Receipts // nil without a Reply
	// transcript: the session's transcript and its size when the letter
	// went, where the turn that carries it shows.
	transcript string
	offset     int64
}

// qwenTimeout bounds one letter.
const qwenTimeout = 5 * time.Second

// Write writes the letter to the session the record names now.
func (q *Qwen) Write(ctx context.Context, l QwenLetter) (*QwenSent, error) {
	const op = "qwen inbox"
	switch {
	case l.Text == "":
		return nil, &Error{Op: op, Err: errors.New("empty letter")}
	case len(l.Text) > MaxText:
		return nil, &Error{Op: op, Err: fmt.Errorf("letter is %d bytes; at most %d", len(l.Text), MaxText)}
	}
	r, err := ReadQwenRecord(q.Record)
	if err != nil {
		return nil, &Error{Op: op, Kind: kindOf(err), Err: err}
	}
	sent := &QwenSent{MsgID: newID(), Session: r.SessionID}
	sent.transcript = QwenTranscript(q.Record, r.SessionID)
	if fi, err := os.Stat(sent.transcript); err == nil {
		sent.offset = fi.Size()
	}
	frame := qwenFrame{MsgV: 1, MsgID: sent.MsgID, Type: "user", ToSessionID: r.SessionID, Priority: "next",
		Message: &claudeMessage{Role: "user", Content: l.Text}}
	if l.Reply != nil {
		frame.From, frame.ReplyToken, frame.FromName = l.Reply.Path(), l.Reply.token, "parley"
		if sent.Receipt, err = l.Reply.expect(sent.MsgID); err != nil {
			return nil, &Error{Op: op, Err: err}
		}
	}
	var lines [][]byte
	if r.IPCToken != "" {
		b, _ := json.Marshal(qwenFrame{MsgV: 1, Type: "auth", Token: r.IPCToken})
		lines = append(lines, b)
	}
	b, _ := json.Marshal(frame)
	lines = append(lines, b)
	if err := sendLines(ctx, r.IPCPath, lines, qwenTimeout); err != nil {
		sent.Receipt.Close()
		return nil, &Error{Op: op, Kind: kindOf(err), Err: err}
	}
	return sent, nil
}

// qwenFrame is every line Parley writes to a Qwen Code session: the auth
// line and a user frame. No review class (fromMode) is ever among them.
type qwenFrame struct {
	MsgV        int            `json:"msgV"`
	MsgID       string         `json:"msgId,omitempty"`
	Type        string         `json:"type"`
	Token       string         `json:"token,omitempty"`
	From        string         `json:"from,omitempty"`
	ReplyToken  string         `json:"replyToken,omitempty"`
	FromName    string         `json:"fromName,omitempty"`
	ToSessionID string         `json:"toSessionId,omitempty"`
	Priority    string         `json:"priority,omitempty"`
	Message     *claudeMessage `json:"message,omitempty"`
}

// sendLines writes lines on one connection to a Unix socket, half-closes
// it, and waits for the other end to close.
func sendLines(ctx context.Context, path string, lines [][]byte, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := dialUnix(ctx, path)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	if _, err := conn.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if uc, ok := conn.(*net.UnixConn); ok {
		if err := uc.CloseWrite(); err != nil {
			return fmt.Errorf("half-close: %w", err)
		}
	}
	if _, err := io.Copy(io.Discard, conn); err != nil {
		return fmt.Errorf("wait for the session to close: %w", err)
	}
	return nil
}

// QwenTranscript is where the Qwen Code session of the record keeps the
// transcript of session id: $QWEN_HOME/projects/<project>/chats/<id>.jsonl
// (QWEN_HOME holds the record's sessions directory), or "" when there is
// none yet. (A session whose QWEN_RUNTIME_DIR moves it elsewhere has none
// here: its letters are never seen, only unconfirmed.)
func QwenTranscript(record, id string) string {
	home := filepath.Dir(filepath.Dir(record))
	ms, _ := filepath.Glob(filepath.Join(home, "projects", "*", "chats", id+".jsonl"))
	if len(ms) == 1 {
		return ms[0]
	}
	return ""
}

// Carried waits until the session's transcript shows a turn that carries
// the letter (a user record holding the letter's marker: the model got it),
// or ctx ends. It looks every interval.
func (s *QwenSent) Carried(ctx context.Context, record, letterID string, interval time.Duration) error {
	want := LetterMarker + letterID + "]"
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if s.transcript == "" {
			s.transcript = QwenTranscript(record, s.Session)
		}
		if s.transcript != "" {
			found, off, err := scanTranscript(s.transcript, s.offset, want)
			if err == nil {
				if found {
					return nil
				}
				s.offset = off
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// scanTranscript reads the whole lines of path from off on, and reports
// whether a user record among them holds want, and where the next look
// starts.
func scanTranscript(path string, off int64, want string) (bool, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, off, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() < off {
		off = 0 // rewritten
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return false, off, err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return false, off, nil // a partial line is read again next time
		}
		off += int64(len(line))
		if !bytes.Contains(line, []byte(`"user"`)) {
			continue
		}
		var rec struct {
			Type    string `json:"type"`
			Message struct {
				Role  string `json:"role"`
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"message"`
		}
		if json.Unmarshal(line, &rec) != nil || rec.Type != "user" {
			continue
		}
		for _, p := range rec.Message.Parts {
			if strings.Contains(p.Text, want) {
				return true, off, nil
			}
		}
	}
}

// QwenListener is this process's inbox for what Qwen Code sessions say
// back of its letters: a Unix socket in a private directory of its own,
// and a token the sessions present on their receipts (the letters'
// replyToken), without which a connection is dropped.
type QwenListener struct {
	replies
	dir   string
	token string
}

// ListenQwen opens a receipt inbox in a new private directory under
// parent (os.TempDir() if ""); Close removes it.
func ListenQwen(parent string) (*QwenListener, error) {
	dir, err := os.MkdirTemp(parent, "parley-qwen-")
	if err != nil {
		return nil, fmt.Errorf("receipts inbox: %w", err)
	}
	var tok [32]byte
	rand.Read(tok[:])
	l := &QwenListener{dir: dir, token: hex.EncodeToString(tok[:])}
	if err := l.listen(filepath.Join(dir, strconv.Itoa(os.Getpid())+".sock"), l.read); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return l, nil
}

// Path is the inbox's socket, a letter's "from".
func (l *QwenListener) Path() string { return l.path }

// Close stops listening, removes the inbox, and closes the receipts'
// channels still open.
func (l *QwenListener) Close() error {
	err := l.replies.Close()
	os.RemoveAll(l.dir)
	return err
}

// read takes one connection: an auth line with this inbox's token, then
// delivery_status frames.
func (l *QwenListener) read(c net.Conn) {
	defer c.Close()
	if err := checkPeer(c); err != nil {
		return
	}
	c.SetReadDeadline(time.Now().Add(qwenTimeout))
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 4096), 64<<10)
	authed := false
	for sc.Scan() {
		var f struct {
			MsgV          int      `json:"msgV"`
			Type          string   `json:"type"`
			Token         string   `json:"token"`
			Action        string   `json:"action"`
			Status        string   `json:"status"`
			OrigMsgID     string   `json:"origMsgId"`
			Reason        string   `json:"reason"`
			DropReason    string   `json:"dropReason"`
			DroppedMsgIDs []string `json:"droppedMsgIds"`
		}
		if json.Unmarshal(sc.Bytes(), &f) != nil || f.MsgV > 1 {
			if !authed {
				return
			}
			continue
		}
		if !authed {
			if f.Type != "auth" || f.Token != l.token {
				return // not a session answering our letters
			}
			authed = true
			continue
		}
		if f.Type != "control" || f.Action != "delivery_status" {
			continue
		}
		r := Receipt{Status: f.Status, Reason: f.Reason, At: time.Now().UTC()}
		switch f.Status {
		case ReceiptHeld, ReceiptDelivered, ReceiptDenied, ReceiptRefused, ReceiptExpired, ReceiptMisaddressed:
		case ReceiptDropped:
			if f.DropReason != "" {
				r.Reason = f.DropReason + ": " + f.Reason
			}
		default:
			continue // a status of a newer protocol: no transition
		}
		l.deliver(f.OrigMsgID, r)
		if f.Status == ReceiptDropped {
			for _, id := range f.DroppedMsgIDs {
				l.deliver(id, r)
			}
		}
	}
}
