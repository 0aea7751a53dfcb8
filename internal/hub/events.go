package hub

import (
	"encoding/json"
	"time"
)

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
	// What the client said of a letter: it holds it for a person (Reason:
	// why), a person declined it (the copy left the inbox), or the session
	// went idle with no word of it; or no letter could go, the thread not
	// loaded.
	EventMessageHeld        EventKind = "message.held"
	EventMessageDeclined    EventKind = "message.declined"
	EventMessageUnconfirmed EventKind = "message.unconfirmed"
	EventMessageNotLoaded   EventKind = "message.not_loaded"
	EventGroupChanged       EventKind = "group.changed"
	// An agent's session opened its door, or the door closed (SessionDoor).
	EventDoorOpened EventKind = "door.opened"
	EventDoorClosed EventKind = "door.closed"
	// EventResync tells this daemon's subscribers that events of the other
	// daemons on the store may have been missed (the notifier lost its
	// connection): what they keep of the others' doings, they look at again
	// in the store. WakeAll publishes it; it never leaves the daemon.
	EventResync EventKind = "resync"
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
	Change     string // for groups: created, deleted, member_added, member_removed; for reservations: granted, renewed, released, force_released, reclaimed
	Previous   string // for agent.renamed: the old name, now an alias of Agent
	Text       string // a line for people (an escalation's step)

	Reservations []*Reservation // for EventReservations
	SessionDoor  *SessionDoor   // for door events
	Reason       string         // for message.bounced: why
	Via          WakePath       // for message.handed: the door's path
	Until        time.Time      // for message.held: until when the client holds it, if it said
	Letter       string         // for the letter's events (handed, held, seen...): the door's letter

	// Detail is an event that another package defines (the runner's, the
	// permission inbox's), as its publisher encoded it (Publish): the hub
	// carries it to the subscribers and the other daemons as it is.
	Detail json.RawMessage
	// Remote says the event happened on another daemon that shares the
	// store and came through the notifier (Relay). Subscribers act on it as
	// on their own daemon's; one that keeps what only this daemon did can
	// tell them apart.
	Remote bool
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

// Publish announces an event of another part of the daemon (the runner's,
// the permission inbox's) the way the hub announces its own: to this
// daemon's subscribers and, through the notifier, to the other daemons
// sharing the store, whose hubs publish it to theirs (Relay). Its kind must
// not be one of the hub's; Detail carries the event, encoded by its
// publisher. It never blocks.
func (h *Hub) Publish(e Event) {
	if e.Kind == "" || e.Remote {
		return
	}
	h.publish(e)
}

// publish announces e here and to the other daemons.
// Announce publishes an event of one of the hub's kinds that a subsystem
// beside it raises (the escalation ladder's agent.escalated), the way the
// hub publishes its own: here and to the other daemons.
func (h *Hub) Announce(e Event) { h.publish(e) }

func (h *Hub) publish(e Event) {
	if e.Time.IsZero() {
		e.Time = h.now().UTC()
	}
	h.publishLocal(e)
	if h.notifier != nil {
		h.notifier.Announce(e)
	}
}

// publishLocal calls this daemon's subscribers with e.
func (h *Hub) publishLocal(e Event) {
	h.fence.track(e)
	h.subsMu.RLock()
	defer h.subsMu.RUnlock()
	if len(h.subs) == 0 {
		return
	}
	if e.Time.IsZero() {
		e.Time = h.now().UTC()
	}
	for _, fn := range h.subs {
		fn(e)
	}
}

// Relay takes an event from another daemon on the store (a notifier calls
// it): it wakes the waiters here of the inboxes the event put mail in (a
// message sent, a copy back in its inbox), then publishes the event to this
// daemon's subscribers, marked Remote. It is not announced again.
func (h *Hub) Relay(e Event) {
	e.Remote = true
	switch e.Kind {
	case EventMessageSent, EventTaskReleased:
		h.wakeLocal(e.Workspace, e.Recipients)
	case EventMessageRedelivered:
		h.wakeLocal(e.Workspace, []string{e.Agent})
	case EventAgentRenamed:
		h.renamed(e.Workspace)
	case EventAgentLeft:
		if h.Connected(e.Workspace, e.Agent) {
			// It left another daemon (or that daemon died) but has a
			// session here: the store says so again, off the notifier's
			// goroutine.
			go h.storeLeft(e.Workspace, e.Agent)
		}
	}
	h.publishLocal(e)
}

// SendEvents are the events of a send: message.sent, then message.delivered
// for each copy handed straight to a waiting reader. The hub publishes them;
// a SendStore that daemons share announces them to the others in the send's
// own transaction (so they hear of a message exactly when it is stored),
// and the hub then publishes them here only.
func SendEvents(m *Message, recipients []string, handed []Handoff) []Event {
	es := make([]Event, 0, 1+len(handed))
	es = append(es, Event{Kind: EventMessageSent, Workspace: m.Workspace, Time: m.CreatedAt, Agent: m.From, Message: m, Recipients: recipients})
	for _, o := range handed {
		d := o.Delivery(m)
		es = append(es, deliveryEvent(EventMessageDelivered, d, m.CreatedAt))
	}
	return es
}

// deliveryEvent is the event of one copy's change.
func deliveryEvent(kind EventKind, d *Delivery, at time.Time) Event {
	return Event{Kind: kind, Workspace: d.Workspace, Time: at, Agent: d.Recipient, MessageID: d.MessageID,
		Reader: d.Reader, Count: d.Count, Message: d.Message, Reason: d.BounceReason, Letter: d.Letter}
}
