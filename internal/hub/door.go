package hub

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"
	"unicode"
)

// DoorKind names a client's own way into a running session.
type DoorKind string

// The doors.
const (
	// DoorClaude is a Claude Code session's inbox socket
	// (CLAUDE_CODE_MESSAGING_SOCKET): Address is the socket, Session the
	// Claude session id.
	DoorClaude DoorKind = "claude"
	// DoorCodex is a Codex thread's queue on its app-server: Address is
	// the CODEX_HOME, Session the thread id.
	DoorCodex DoorKind = "codex"
	// DoorQwen is a Qwen Code session's cross-session inbox: Address is
	// the session's record in its registry ($QWEN_HOME/sessions/PID.json,
	// read again before each letter), Session the Qwen session id.
	DoorQwen DoorKind = "qwen"
	// DoorOpencode is an opencode instance's local HTTP server: Address
	// is its loopback URL, Session the instance's directory (its MCP
	// servers are the instance's, told of no session).
	DoorOpencode DoorKind = "opencode"
)

// WakePath is the wake path of the copies a letter through a door of this
// kind told the agent of.
func (k DoorKind) WakePath() WakePath { return WakePath("door:" + string(k)) }

// ValidDoorKind checks a door's kind.
func ValidDoorKind(k DoorKind) error {
	switch k {
	case DoorClaude, DoorCodex, DoorQwen, DoorOpencode:
		return nil
	}
	return Errorf("", Invalid, "invalid door kind %q: want claude, codex, qwen or opencode", k)
}

// SessionDoor is a running client session's own way in, which the session itself
// registered for its agent (`parley mcp serve`, or a hook of the same
// session): Parley writes a short letter through it to draw the agent's
// attention to new mail. A door is bound to its workspace and agent, to the
// machine and OS user whose session opened it, and is written only by the
// daemon of that user on that machine.
type SessionDoor struct {
	ID        string // ULID, given when first opened
	Workspace string
	Agent     string
	Kind      DoorKind
	// Session is the client's session: Claude Code's session id, the Codex
	// thread id. One door per workspace, agent, kind and session: opening
	// it again refreshes it.
	Session string
	Address string // Claude: the inbox socket's path; Codex: CODEX_HOME
	// Token is Claude Code's messaging token. It is a credential of the
	// session: stored to write with, never shown or logged.
	Token string
	// Owner is the key of the MCP session that registered the door (its
	// reader), or "" when a hook did: the door closes when that session
	// ends.
	Owner string
	Host  string // the machine
	UID   int    // the OS user
	// OpenedAt is when it was first opened, RefreshedAt when it was last
	// registered or refreshed, ClosedAt when it closed (zero while open),
	// and CloseReason why.
	OpenedAt, RefreshedAt, ClosedAt time.Time
	CloseReason                     string
}

// Open reports whether the door is open.
func (d *SessionDoor) Open() bool { return d.ClosedAt.IsZero() }

// Dormant reports whether the door is a Codex door kept while its thread is
// not loaded on its app-server (a `codex exec` thread, or one that closed
// while no daemon watched): no letter is queued there unless codex_resume
// lets the daemon resume the thread; the thread's door opens again when a
// session of it registers it. It counts as closed everywhere else, and goes
// (closes for another reason) as open doors do.
func (d *SessionDoor) Dormant() bool {
	return !d.Open() && d.Kind == DoorCodex && d.CloseReason == DoorClosedNotLoaded
}

// Limits of a door's fields.
const (
	maxDoorSession = 128
	maxDoorAddress = 1024
	maxDoorToken   = 256
)

// Reasons a door closes.
const (
	DoorClosedSessionEnded = "session ended"
	DoorClosedGone         = "door gone"
	DoorClosedRefused      = "client refused"
	DoorClosedReplaced     = "replaced by a newer door of the session"
	DoorClosedByPerson     = "closed by a person"
	// DoorClosedNotLoaded: a Codex door whose thread is not loaded on its
	// app-server; the door is dormant (SessionDoor.Dormant).
	DoorClosedNotLoaded = "thread not loaded"
)

// OpenDoor registers d (Workspace, Agent, Kind, Session, Address, Token,
// Owner, UID) for this daemon's host, or refreshes the door of the same
// workspace, agent, kind and session, opening it again if it was closed.
// It returns the door as stored.
func (h *Hub) OpenDoor(ctx context.Context, d SessionDoor) (*SessionDoor, error) {
	const op = "open door"
	if err := ValidWorkspace(d.Workspace); err != nil {
		return nil, withOp(op, err)
	}
	if err := ValidName("agent name", d.Agent); err != nil {
		return nil, withOp(op, err)
	}
	if err := ValidDoorKind(d.Kind); err != nil {
		return nil, withOp(op, err)
	}
	if err := checkDoorText("session", d.Session, maxDoorSession); err != nil {
		return nil, withOp(op, err)
	}
	if err := checkDoorText("address", d.Address, maxDoorAddress); err != nil {
		return nil, withOp(op, err)
	}
	if d.Token != "" {
		if err := checkDoorText("token", d.Token, maxDoorToken); err != nil {
			return nil, withOp(op, err)
		}
	}
	if d.Kind == DoorOpencode {
		if !loopbackURL(d.Address) {
			return nil, Errorf(op, Invalid, "the door's server %q is not an http URL on this machine's loopback", d.Address)
		}
	} else if !filepath.IsAbs(d.Address) {
		what := "socket"
		switch d.Kind {
		case DoorCodex:
			what = "CODEX_HOME"
		case DoorQwen:
			what = "session record"
		}
		return nil, Errorf(op, Invalid, "the door's %s %q is not an absolute path", what, d.Address)
	}
	now := h.now().UTC()
	d.ID = h.newID(now)
	d.Host = h.host
	d.OpenedAt, d.RefreshedAt, d.ClosedAt, d.CloseReason = now, now, time.Time{}, ""
	out, err := h.store.PutDoor(ctx, &d)
	if err != nil {
		return nil, withOp(op, err)
	}
	h.publish(Event{Kind: EventDoorOpened, Workspace: out.Workspace, Agent: out.Agent, SessionDoor: out})
	if out.Owner != "" {
		// A session has one door of a kind: a Codex session that moved to
		// a new thread leaves the old one.
		if ds, err := h.store.Doors(ctx, out.Workspace, out.Agent, false); err == nil {
			for _, o := range ds {
				if o.ID != out.ID && o.Owner == out.Owner && o.Kind == out.Kind {
					h.CloseDoor(ctx, o.Workspace, o.ID, DoorClosedReplaced)
				}
			}
		}
	}
	return out, nil
}

// loopbackURL reports whether s is http://HOST:PORT with HOST a loopback
// address: a letter never leaves the machine.
func loopbackURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "http" || u.Port() == "" || u.User != nil || (u.Path != "" && u.Path != "/") {
		return false
	}
	if u.Hostname() == "localhost" {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}

// checkDoorText checks a door's session, address or token: present,
// bounded, printable, one line.
func checkDoorText(what, s string, max int) error {
	switch {
	case s == "":
		return Errorf("", Invalid, "the door has no %s", what)
	case len(s) > max:
		return Errorf("", Invalid, "the door's %s is %d bytes; at most %d", what, len(s), max)
	case strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return Errorf("", Invalid, "the door's %s has control characters", what)
	}
	return nil
}

// CloseDoor closes the door with the id in ws, saying why; closing a
// closed door is not an error. A dormant door closed for another reason
// ends (it is no longer dormant). NotFound if there is none.
func (h *Hub) CloseDoor(ctx context.Context, ws, id, reason string) (*SessionDoor, error) {
	const op = "close door"
	d, err := h.store.CloseDoor(ctx, ws, id, reason, h.now().UTC())
	if err != nil {
		return nil, withOp(op, err)
	}
	if d.CloseReason == reason && !d.ClosedAt.IsZero() {
		h.publish(Event{Kind: EventDoorClosed, Workspace: d.Workspace, Agent: d.Agent, SessionDoor: d})
	}
	return d, nil
}

// CloseDoorsOf closes the open doors that the MCP session owner registered:
// its session ended.
func (h *Hub) CloseDoorsOf(ctx context.Context, ws, agent, owner string) {
	if owner == "" || agent == "" {
		return
	}
	ds, err := h.store.Doors(ctx, ws, agent, false)
	if err != nil {
		h.log.Warn("close the doors of an ended session", "agent", agent, "err", err)
		return
	}
	for _, d := range ds {
		if d.Owner == owner {
			if _, err := h.CloseDoor(ctx, ws, d.ID, DoorClosedSessionEnded); err != nil {
				h.log.Warn("close a door", "agent", agent, "err", err)
			}
		}
	}
}

// Doors lists ws's doors (of agent if not empty), newest first: the open
// ones, and with withClosed the closed ones too.
func (h *Hub) Doors(ctx context.Context, ws, agent string, withClosed bool) ([]*SessionDoor, error) {
	ds, err := h.store.Doors(ctx, ws, agent, withClosed)
	return ds, withOp("list doors", err)
}

// SessionDoor returns the door with the id in ws, open or closed.
func (h *Hub) SessionDoor(ctx context.Context, ws, id string) (*SessionDoor, error) {
	ds, err := h.store.Doors(ctx, ws, "", true)
	if err != nil {
		return nil, withOp("get door", err)
	}
	for _, d := range ds {
		if d.ID == id {
			return d, nil
		}
	}
	return nil, Errorf("get door", NotFound, "no door %q in this workspace", id)
}

// DeliverMode says how a message may draw its recipient's attention when it
// is not blocked in a wait: through the door of its session, or not at
// all. The doors map it onto what the client offers.
type DeliverMode string

// The delivery modes.
const (
	// DeliverQueue wakes nobody: the message waits in the inbox for the
	// agent's next read, or for a hook at its next turn boundary.
	DeliverQueue DeliverMode = "queue"
	// DeliverIdle writes a letter when the session is idle, starting a
	// turn; a busy session gets it when its turn ends.
	DeliverIdle DeliverMode = "idle"
	// DeliverSteer writes a letter at once: a busy session gets it in its
	// running turn, between tool calls; an idle one starts a turn.
	DeliverSteer DeliverMode = "steer"
	// DeliverInterrupt stops a managed agent's turn in progress and starts
	// one with the message; a client session's door cannot interrupt, so
	// there it is DeliverSteer.
	DeliverInterrupt DeliverMode = "interrupt"
)

// ParseDeliverMode validates s; "" means the priority's default.
func ParseDeliverMode(s string) (DeliverMode, error) {
	switch m := DeliverMode(s); m {
	case "", DeliverQueue, DeliverIdle, DeliverSteer, DeliverInterrupt:
		return m, nil
	}
	return "", Errorf("", Invalid, "invalid deliver %q: want queue, idle, steer or interrupt", s)
}

// DefaultDeliver is the mode of a message that names none: critical and high
// steer into a running turn, normal waits for the session to be idle, low
// wakes nobody.
func DefaultDeliver(p Priority) DeliverMode {
	switch p {
	case Critical, High:
		return DeliverSteer
	case Low:
		return DeliverQueue
	}
	return DeliverIdle
}

// Mode is the message's delivery mode: its own, else its priority's.
func (m *Message) Mode() DeliverMode {
	if m.Deliver != "" {
		return m.Deliver
	}
	return DefaultDeliver(m.Priority)
}

// Bounce reasons.
const (
	BounceNoReader = "no reader and no door within its time to live"
	BounceDoorGone = "its door is gone"
	BounceRefused  = "the client refused it"
)

// MaxTTL bounds a message's time to live.
const MaxTTL = 30 * 24 * time.Hour

// expire bounces the copies whose message's time to live ended while
// nothing reached them (no reader took them, no path told the agent of
// them), if their recipient has still no reader and no door, and tells each
// message's sender once.
func (h *Hub) expire(ctx context.Context, now time.Time) {
	due, err := h.store.DueExpiries(ctx, now)
	if err != nil {
		h.log.Warn("find expired messages", "err", err)
		return
	}
	type rkey struct{ ws, name string }
	byRecipient := map[rkey][]*Delivery{}
	var order []rkey
	for _, d := range due {
		k := rkey{d.Workspace, d.Recipient}
		if _, ok := byRecipient[k]; !ok {
			order = append(order, k)
		}
		byRecipient[k] = append(byRecipient[k], d)
	}
	bounced := map[string][]*Delivery{} // by message id
	var msgs []*Message
	for _, k := range order {
		ds := byRecipient[k]
		reason, ok := h.unreachable(ctx, k.ws, k.name, ds[0].Message.CreatedAt)
		if !ok {
			continue
		}
		out, err := h.store.Bounce(ctx, k.ws, k.name, idsOf(ds), reason, now)
		if err != nil {
			h.log.Warn("bounce expired messages", "workspace", k.ws, "recipient", k.name, "err", err)
			continue
		}
		msgOf := map[string]*Message{}
		for _, d := range ds {
			msgOf[d.MessageID] = d.Message
		}
		for _, d := range out {
			if d.Message == nil {
				d.Message = msgOf[d.MessageID]
			}
			if _, ok := bounced[d.MessageID]; !ok {
				msgs = append(msgs, d.Message)
			}
			bounced[d.MessageID] = append(bounced[d.MessageID], d)
		}
		h.publishDeliveries(EventMessageBounced, out)
	}
	for _, m := range msgs {
		h.noticeBounce(ctx, m, bounced[m.ID])
	}
}

// unreachable reports whether nothing can reach the agent: it is not
// present (no session, not seen lately) and has no open door. The reason
// says why, for a message sent at sent: its door went away or refused
// letters since, or there was none.
func (h *Hub) unreachable(ctx context.Context, ws, name string, sent time.Time) (string, bool) {
	if IsQueue(name) {
		return "", false // a queue's task waits for whoever claims it
	}
	if a, err := h.store.Agent(ctx, ws, name); err == nil {
		h.overlaySeen(a)
		if h.active(a) {
			return "", false
		}
	} else if !IsNotFound(err) {
		return "", false // unknown: keep it
	}
	if h.Waiters(ws, name) > 0 {
		return "", false
	}
	doors, err := h.store.Doors(ctx, ws, name, true)
	if err != nil {
		return "", false
	}
	reason := BounceNoReader
	for _, d := range doors {
		if d.Open() {
			return "", false
		}
		if d.ClosedAt.After(sent) && reason == BounceNoReader {
			switch d.CloseReason {
			case DoorClosedGone:
				reason = BounceDoorGone + " (" + string(d.Kind) + " session " + d.Session + ")"
			case DoorClosedRefused:
				reason = BounceRefused + " (" + string(d.Kind) + " session " + d.Session + ")"
			}
		}
	}
	return reason, true
}

// noticeBounce tells a bounced message's sender who did not get it and why.
func (h *Hub) noticeBounce(ctx context.Context, m *Message, ds []*Delivery) {
	h.noticeReturn(ctx, m, ds, "bounced", "Nothing reads it now; send it again when the agent is back.")
}

// noticeReturn tells the sender of m that the copies ds came back (kind
// "bounced" or "declined"), why, and what to do.
func (h *Hub) noticeReturn(ctx context.Context, m *Message, ds []*Delivery, kind, then string) {
	if m.From == NoticeSender || len(ds) == 0 {
		return // a notice that bounces is not noticed again
	}
	var who []string
	for _, d := range ds {
		who = append(who, d.Recipient)
	}
	ttl := ""
	if !m.ExpiresAt.IsZero() {
		ttl = ", time to live until " + m.ExpiresAt.UTC().Format(time.RFC3339)
	}
	verb := "did not reach"
	if kind == "declined" {
		verb = "was declined by"
	}
	content := fmt.Sprintf("%s: your message %s to %s %s %s: %s (sent %s%s). %s",
		strings.ToUpper(kind[:1])+kind[1:], m.ID, m.To, verb, strings.Join(who, ", "), ds[0].BounceReason,
		m.CreatedAt.UTC().Format(time.RFC3339), ttl, then)
	n, err := h.newMessage(ctx, SendRequest{Workspace: m.Workspace, From: NoticeSender, To: m.From,
		Content: content, Priority: string(High), TTL: NoTTL,
		Metadata: map[string]string{"kind": kind, "message_id": m.ID, "recipients": strings.Join(who, ","), "reason": ds[0].BounceReason}})
	if err == nil {
		_, err = h.deliver(ctx, n, []string{m.From}, nil)
	}
	if err != nil {
		h.log.Warn("send bounce notice", "workspace", m.Workspace, "message", m.ID, "err", err)
	}
}

// Bounced lists the bounced and declined copies of ws's messages sent by
// sender (every sender's if ""), newest first, with their messages: the
// dead letters.
func (h *Hub) Bounced(ctx context.Context, ws, sender string, limit int) ([]*Delivery, error) {
	if limit <= 0 {
		limit = DefaultCheckLimit
	}
	if limit > MaxCheckLimit {
		limit = MaxCheckLimit
	}
	ds, err := h.store.Bounced(ctx, ws, sender, limit)
	return ds, withOp("list bounced", err)
}
