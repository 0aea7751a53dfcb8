package hub

import "context"

// Notifier carries wake-ups to the other daemons that share this hub's store
// (PostgreSQL's LISTEN/NOTIFY, for one). The hub calls Notify after every write
// that puts messages in inboxes (a send, a delivery returned to its inbox);
// the notifier calls Wake on each other daemon's hub, whose waiters then look
// at the store again. Notify must not block for long: it runs on the sender's
// path, after the send is durable, and an error is only logged (a missed remote
// wake-up is found by the waiter's next look, never lost: the message is stored).
type Notifier interface {
	Notify(ctx context.Context, ws string, recipients []string) error
}

// Wake wakes the waiters of the recipients' inboxes in this process, which then
// look at the store again. Notifiers call it for wake-ups from other daemons;
// a spurious wake-up costs one store read. It also tells this process's
// subscribers (EventInboxWoken): a door here may be the recipient's way in.
func (h *Hub) Wake(ws string, recipients []string) {
	h.wakeLocal(ws, recipients)
	h.publish(Event{Kind: EventInboxWoken, Workspace: ws, Recipients: recipients})
}

// wake wakes local waiters at once, then tells the notifier, if any.
func (h *Hub) wake(ctx context.Context, ws string, recipients []string) {
	if len(recipients) == 0 {
		return
	}
	h.wakeLocal(ws, recipients)
	if h.notifier != nil {
		if err := h.notifier.Notify(context.WithoutCancel(ctx), ws, recipients); err != nil {
			h.log.Warn("notify other daemons", "workspace", ws, "recipients", len(recipients), "err", err)
		}
	}
}

// wakeLocal signals every waiter of the recipients' inboxes in this process.
func (h *Hub) wakeLocal(ws string, recipients []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, name := range recipients {
		for w := range h.waiters[inboxKey{ws, name}] {
			w.signal()
		}
	}
}

// Waiters counts the blocked waits on the agent's inbox.
func (h *Hub) Waiters(ws, agent string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.waiters[inboxKey{ws, agent}])
}

// WakeAll wakes every waiter in this process. A notifier calls it when it may
// have missed wake-ups (its connection was lost): each waiter looks at the
// store again, so no message waits for a wake-up that never came.
func (h *Hub) WakeAll() {
	h.mu.Lock()
	for _, ws := range h.waiters {
		for w := range ws {
			w.signal()
		}
	}
	h.mu.Unlock()
	h.publish(Event{Kind: EventInboxWoken}) // every inbox: no workspace, no recipients
}
