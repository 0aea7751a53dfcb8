package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// The events a daemon tells the others of (hub.Notifier), as they travel in
// NOTIFY payloads: JSON with short keys, several events to a payload. A
// notification holds at most maxPayload bytes, so an event too large to
// travel whole travels cut: a message without its content (the receiver
// reads it from the store), an event without its detail (the receiver's
// subscribers learn what changed, and look it up).

// maxEvent bounds one encoded event: a larger one is cut.
const maxEvent = 6000

type wireEvent struct {
	Kind         string            `json:"k"`
	Workspace    string            `json:"w,omitempty"`
	Time         time.Time         `json:"t"`
	Agent        string            `json:"a,omitempty"`
	Role         string            `json:"ro,omitempty"`
	Status       string            `json:"s,omitempty"`
	Message      *wireMessage      `json:"m,omitempty"`
	Recipients   []string          `json:"r,omitempty"`
	Group        string            `json:"g,omitempty"`
	MessageID    string            `json:"i,omitempty"`
	Reader       string            `json:"rd,omitempty"`
	Count        int               `json:"n,omitempty"`
	Change       string            `json:"ch,omitempty"`
	Previous     string            `json:"pv,omitempty"`
	Text         string            `json:"tx,omitempty"`
	Reservations []wireReservation `json:"rs,omitempty"`
	Detail       json.RawMessage   `json:"d,omitempty"`
	// A copy's attention: why it bounced, the door that told of it; a
	// client session's door, without its token and its owner (credentials
	// of the session, which stay with the daemon that has it).
	Reason string     `json:"why,omitempty"`
	Via    string     `json:"via,omitempty"`
	Letter string     `json:"l,omitempty"`
	Until  *time.Time `json:"u,omitempty"`
	Door   *wireDoor  `json:"door,omitempty"`
	// Cut: the message travels without its content, payload and metadata
	// (read it from the store); Dropped: the event lost its detail and
	// reservations on the way.
	Cut     bool `json:"c,omitempty"`
	Dropped bool `json:"x,omitempty"`
}

type wireMessage struct {
	ID          string            `json:"id"`
	Workspace   string            `json:"w,omitempty"`
	From        string            `json:"f,omitempty"`
	To          string            `json:"to,omitempty"`
	Content     string            `json:"c,omitempty"`
	Payload     json.RawMessage   `json:"p,omitempty"`
	Priority    string            `json:"pr,omitempty"`
	ReplyTo     string            `json:"re,omitempty"`
	ThreadID    string            `json:"th,omitempty"`
	Metadata    map[string]string `json:"md,omitempty"`
	CreatedAt   time.Time         `json:"at"`
	AckRequired bool              `json:"ack,omitempty"`
	AckDeadline *time.Time        `json:"dl,omitempty"`
	Origin      wireOrigin        `json:"o"`
	ExpiresAt   *time.Time        `json:"ex,omitempty"`
	Deliver     string            `json:"dv,omitempty"`
	Idempotency string            `json:"ik,omitempty"`
}

type wireOrigin struct {
	Role string `json:"r,omitempty"`
	Host string `json:"h,omitempty"`
	Door string `json:"d,omitempty"`
	Task string `json:"t,omitempty"`
}

type wireDoor struct {
	ID          string    `json:"id"`
	Workspace   string    `json:"w,omitempty"`
	Agent       string    `json:"a,omitempty"`
	Kind        string    `json:"k,omitempty"`
	Session     string    `json:"s,omitempty"`
	Address     string    `json:"ad,omitempty"`
	Host        string    `json:"h,omitempty"`
	UID         int       `json:"u"`
	OpenedAt    time.Time `json:"op"`
	RefreshedAt time.Time `json:"rf"`
	ClosedAt    time.Time `json:"cl"`
	CloseReason string    `json:"why,omitempty"`
}

type wireReservation struct {
	ID        string    `json:"id"`
	Workspace string    `json:"w,omitempty"`
	Agent     string    `json:"a,omitempty"`
	Pattern   string    `json:"p,omitempty"`
	Exclusive bool      `json:"x,omitempty"`
	Reason    string    `json:"r,omitempty"`
	CreatedAt time.Time `json:"at"`
	ExpiresAt time.Time `json:"ex"`
}

// encodeEvent is e as it travels, cut to fit maxEvent if need be.
func encodeEvent(e hub.Event) []byte {
	w := wireEvent{Kind: string(e.Kind), Workspace: e.Workspace, Time: e.Time, Agent: e.Agent, Role: e.Role, Status: e.Status,
		Recipients: e.Recipients, Group: e.Group, MessageID: e.MessageID, Reader: e.Reader, Count: e.Count, Change: e.Change, Previous: e.Previous,
		Text: e.Text, Detail: e.Detail, Reason: e.Reason, Via: string(e.Via), Letter: e.Letter}
	if !e.Until.IsZero() {
		w.Until = &e.Until
	}
	if d := e.SessionDoor; d != nil {
		w.Door = &wireDoor{ID: d.ID, Workspace: d.Workspace, Agent: d.Agent, Kind: string(d.Kind), Session: d.Session,
			Address: d.Address, Host: d.Host, UID: d.UID, OpenedAt: d.OpenedAt, RefreshedAt: d.RefreshedAt,
			ClosedAt: d.ClosedAt, CloseReason: d.CloseReason}
	}
	// A copy's events (delivered, read, acked, back) name their message;
	// its text went with message.sent.
	if m := e.Message; m != nil && !isCopyEvent(e.Kind) {
		w.Message = wireMessageOf(m)
	}
	for _, r := range e.Reservations {
		w.Reservations = append(w.Reservations, wireReservation{ID: r.ID, Workspace: r.Workspace, Agent: r.Agent, Pattern: r.Pattern,
			Exclusive: r.Exclusive, Reason: r.Reason, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt})
	}
	b, _ := json.Marshal(w) // strings, numbers, times and valid JSON: it cannot fail
	if len(b) > maxEvent && w.Message != nil {
		w.Message.Content, w.Message.Payload, w.Message.Metadata, w.Cut = "", nil, nil, true
		b, _ = json.Marshal(w)
	}
	if len(b) > maxEvent {
		w.Detail, w.Reservations, w.Dropped = nil, nil, true
		b, _ = json.Marshal(w)
	}
	return b
}

// isCopyEvent reports whether events of kind are about one recipient's copy.
func isCopyEvent(k hub.EventKind) bool {
	switch k {
	case hub.EventMessageDelivered, hub.EventMessageRead, hub.EventMessageAcked, hub.EventMessageRedelivered,
		hub.EventMessageHanded, hub.EventMessageSeen, hub.EventMessageBounced,
		hub.EventMessageHeld, hub.EventMessageDeclined, hub.EventMessageUnconfirmed, hub.EventMessageNotLoaded:
		return true
	}
	return false
}

func wireMessageOf(m *hub.Message) *wireMessage {
	w := &wireMessage{ID: m.ID, Workspace: m.Workspace, From: m.From, To: m.To, Content: m.Content, Payload: m.Payload,
		Priority: string(m.Priority), ReplyTo: m.ReplyTo, ThreadID: m.ThreadID, Metadata: m.Metadata, CreatedAt: m.CreatedAt,
		AckRequired: m.AckRequired,
		Origin:      wireOrigin{Role: m.Origin.Role, Host: m.Origin.Host, Door: string(m.Origin.Door), Task: m.Origin.Task}}
	if !m.AckDeadline.IsZero() {
		t := m.AckDeadline
		w.AckDeadline = &t
	}
	if !m.ExpiresAt.IsZero() {
		t := m.ExpiresAt
		w.ExpiresAt = &t
	}
	w.Deliver, w.Idempotency = string(m.Deliver), m.IdempotencyKey
	return w
}

// decodeEvent reads an event as it traveled. cut reports a message that
// lacks its text.
func decodeEvent(b []byte) (e hub.Event, cut bool, err error) {
	var w wireEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return hub.Event{}, false, err
	}
	e = hub.Event{Kind: hub.EventKind(w.Kind), Workspace: w.Workspace, Time: w.Time, Agent: w.Agent, Role: w.Role, Status: w.Status,
		Recipients: w.Recipients, Group: w.Group, MessageID: w.MessageID, Reader: w.Reader, Count: w.Count, Change: w.Change, Previous: w.Previous,
		Text: w.Text, Detail: w.Detail, Reason: w.Reason, Via: hub.WakePath(w.Via), Letter: w.Letter}
	if w.Until != nil {
		e.Until = w.Until.UTC()
	}
	if d := w.Door; d != nil {
		e.SessionDoor = &hub.SessionDoor{ID: d.ID, Workspace: d.Workspace, Agent: d.Agent, Kind: hub.DoorKind(d.Kind), Session: d.Session,
			Address: d.Address, Host: d.Host, UID: d.UID, OpenedAt: d.OpenedAt, RefreshedAt: d.RefreshedAt,
			ClosedAt: d.ClosedAt, CloseReason: d.CloseReason}
	}
	if m := w.Message; m != nil {
		e.Message = &hub.Message{ID: m.ID, Workspace: m.Workspace, From: m.From, To: m.To, Content: m.Content, Payload: m.Payload,
			Priority: hub.Priority(m.Priority), ReplyTo: m.ReplyTo, ThreadID: m.ThreadID, Metadata: m.Metadata, CreatedAt: m.CreatedAt,
			AckRequired: m.AckRequired,
			Origin:      hub.Origin{Role: m.Origin.Role, Host: m.Origin.Host, Door: hub.Door(m.Origin.Door), Task: m.Origin.Task}}
		if m.AckDeadline != nil {
			e.Message.AckDeadline = *m.AckDeadline
		}
		if m.ExpiresAt != nil {
			e.Message.ExpiresAt = *m.ExpiresAt
		}
		e.Message.Deliver, e.Message.IdempotencyKey = hub.DeliverMode(m.Deliver), m.Idempotency
	}
	for _, r := range w.Reservations {
		e.Reservations = append(e.Reservations, &hub.Reservation{ID: r.ID, Workspace: r.Workspace, Agent: r.Agent, Pattern: r.Pattern,
			Exclusive: r.Exclusive, Reason: r.Reason, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt})
	}
	return e, w.Cut && e.Message != nil, nil
}

// eventPayloads packs encoded events into as few notifications as fit,
// each {"o": origin, "e": [events]}.
func eventPayloads(origin string, events [][]byte) []string {
	head := `{"o":` + quote(origin) + `,"e":[`
	const tail = `]}`
	var out []string
	var buf bytes.Buffer
	flush := func() {
		if buf.Len() > 0 {
			buf.WriteString(tail)
			out = append(out, buf.String())
			buf.Reset()
		}
	}
	for _, ev := range events {
		if buf.Len() > 0 && buf.Len()+1+len(ev)+len(tail) > maxPayload {
			flush()
		}
		if buf.Len() == 0 {
			buf.WriteString(head)
		} else {
			buf.WriteByte(',')
		}
		buf.Write(ev)
	}
	flush()
	return out
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// sendEventPayloads are the notifications of a batch of sends: each send's
// events (hub.SendEvents), for the other daemons to hear in the same
// transaction as the messages are stored.
func (db *DB) sendEventPayloads(batch []*pendingSend) []string {
	var evs [][]byte
	for _, p := range batch {
		for _, e := range hub.SendEvents(p.m, p.recipients, p.handed) {
			evs = append(evs, encodeEvent(e))
		}
	}
	return eventPayloads(db.origin, evs)
}

// relay gives the events of one notification to w, reading the text of a
// message that traveled cut from the store.
func (n *Notifier) relay(ctx context.Context, w hub.Waker, events []json.RawMessage) {
	for _, raw := range events {
		e, cut, err := decodeEvent(raw)
		if err != nil {
			n.log.Warn("bad event from another daemon", "err", err)
			continue
		}
		if cut {
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			m, err := n.db.Message(rctx, e.Message.Workspace, e.Message.ID)
			cancel()
			if err == nil {
				e.Message = m
			} else {
				n.log.Warn("read a message another daemon announced", "id", e.Message.ID, "err", err)
			}
		}
		w.Relay(e)
	}
}
