package hub

import "time"

// EventKind names a change the hub announces.
type EventKind string

// The events the hub publishes.
const (
	EventAgentJoined EventKind = "agent.joined"
	EventAgentStatus EventKind = "agent.status"
	EventAgentLeft   EventKind = "agent.left"
	EventMessageSent EventKind = "message.sent"
	// Delivery events name one recipient's copy: Agent is the recipient,
	// MessageID the message, Reader and Count the hand-out.
	EventMessageDelivered   EventKind = "message.delivered"
	EventMessageRead        EventKind = "message.read"
	EventMessageAcked       EventKind = "message.acked"
	EventMessageRedelivered EventKind = "message.redelivered"
	// A letter through a door told the recipient of its copy (Via); its
	// session started a turn with it; a copy bounced back (Reason).
	EventMessageHanded  EventKind = "message.handed"
	EventMessageSeen    EventKind = "message.seen"
	EventMessageBounced EventKind = "message.bounced"
	EventGroupChanged   EventKind = "group.changed"
	// Mail came for Recipients of Workspace through another daemon sharing
	// the store (its notifier woke this one); with no workspace, any inbox
	// may have mail (wake-ups may have been missed). Not on the event
	// stream: it names no message.
	EventInboxWoken EventKind = "inbox.woken"
	// An agent's session opened its door, or the door closed (SessionDoor).
	EventDoorOpened EventKind = "door.opened"
	EventDoorClosed EventKind = "door.closed"
)

// Event is one change in a workspace. Subscribers must not modify it.
type Event struct {
	Kind       EventKind
	Workspace  string
	Time       time.Time
	Agent      string // the agent concerned (the sender, for messages)
	Role       string
	Status     string
	Message    *Message
	Recipients []string
	Group      string
	MessageID  string // for delivery events
	Reader     string // for message.delivered
	Count      int    // for delivery events: the copy's delivery count
	Change     string // for groups: created, deleted, member_added, member_removed; for reservations: granted, renewed, released, force_released

	Reservations []*Reservation // for EventReservations
	SessionDoor  *SessionDoor   // for door events
	Reason       string         // for message.bounced: why
	Via          WakePath       // for message.handed: the door's path
}

// Subscribe calls fn for every event until the returned function is called. fn
// runs on the publisher's goroutine: it must not block (hand off to a buffer).
func (h *Hub) Subscribe(fn func(Event)) (cancel func()) {
	h.subsMu.Lock()
	defer h.subsMu.Unlock()
	if h.subs == nil {
		h.subs = make(map[int]func(Event))
	}
	h.nextSub++
	id := h.nextSub
	h.subs[id] = fn
	return func() {
		h.subsMu.Lock()
		defer h.subsMu.Unlock()
		delete(h.subs, id)
	}
}

func (h *Hub) publish(e Event) {
	h.subsMu.RLock()
	defer h.subsMu.RUnlock()
	if len(h.subs) == 0 {
		return
	}
	e.Time = h.now().UTC()
	for _, fn := range h.subs {
		fn(e)
	}
}
