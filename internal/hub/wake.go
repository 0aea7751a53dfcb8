package hub

// Notifier carries this daemon's events to the other daemons that share
// its store (PostgreSQL's LISTEN/NOTIFY, for one): the one path by which
// they hear of what happens here. The hub announces every event it
// publishes (a send, a copy handed out, read or back in its inbox, an agent
// joining or leaving, and what other parts of the daemon publish through
// it); each other daemon's notifier gives it to its hub's Relay, which wakes
// the waiters of the inboxes it filled and publishes it to that daemon's
// subscribers (auto-wake of managed agents, tmux nudges, push notices, the
// dashboard's feed, doors).
//
// Announce must not block: it runs on the publisher's goroutine. An event it
// cannot carry is lost to the others, never the state it tells of (the
// store has it): the notifier then tells the others to look at the store
// again (EventResync), as after a lost connection.
type Notifier interface {
	Announce(e Event)
}

// Wake wakes the waiters of the recipients' inboxes in this process, which then
// look at the store again. A spurious wake-up costs one store read.
func (h *Hub) Wake(ws string, recipients []string) { h.wakeLocal(ws, recipients) }

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

// WakeAll wakes every waiter in this process and publishes EventResync. A
// notifier calls it when it may have missed the other daemons' events (its
// connection was lost): each waiter looks at the store again, so no message
// waits for a wake-up that never came, and so does every subscriber that
// acts on the others' events.
func (h *Hub) WakeAll() {
	h.mu.Lock()
	for _, ws := range h.waiters {
		for w := range ws {
			w.signal()
		}
	}
	h.mu.Unlock()
	h.publishLocal(Event{Kind: EventResync})
}
