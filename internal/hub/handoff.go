package hub

import (
	"context"
	"slices"
)

// A send hands a new message straight to a wait that is blocked on its
// recipient's inbox: the send's own transaction writes that recipient's copy
// already handed out to the wait's reader (Handoff), and the send gives the
// copy to the wait once it committed. The wait's wake-up then costs no store
// write of its own: without this, every wake-up queued a take on the store's
// one writer behind the send that caused it.
//
// A send may hand a message only to a wait that is parked: its last look
// found nothing it takes, and no wake-up came since. Then the new message is
// the first the wait would take, and handing it over is what the wait's next
// look would have done. While a send holds a wait (claimed), the wait does
// not look: it waits for the send's outcome, which always comes (the store
// answers every write), and it takes that outcome with it even when it ends:
// what was handed to a reader that left goes back to the inbox as a take's
// would.

// waiter is one blocked wait on an inbox. Its fields below wake are guarded
// by Hub.mu.
type waiter struct {
	q    TakeQuery
	wake chan struct{} // cap 1: look at the store again

	parked  bool           // a send may hand it a message
	claimed bool           // a send is storing a message handed to it
	handed  chan *Delivery // cap 1: a claim's outcome, nil if the send failed
}

func newWaiter(q TakeQuery) *waiter {
	return &waiter{q: q, wake: make(chan struct{}, 1), handed: make(chan *Delivery, 1)}
}

// admits reports whether w takes m: its priority, and its thread and
// repliers if it waits for a reply (a new message is always after the one a
// reply wait names).
func (w *waiter) admits(m *Message) bool {
	return m.Priority.Rank() <= w.q.MaxRank && (w.q.Thread == "" || w.q.Thread == m.ThreadID) && w.q.replier(m)
}

// replier reports whether m passes q's Repliers and ResultOf.
func (q *TakeQuery) replier(m *Message) bool {
	return q.Repliers == nil || slices.Contains(q.Repliers, m.From) || (q.ResultOf != "" && m.Origin.Task == q.ResultOf)
}

// signal tells w to look again; h.mu is held.
func (w *waiter) signal() {
	w.parked = false
	select {
	case w.wake <- struct{}{}:
	default: // already signalled
	}
}

// park lets sends hand w a message, unless a wake-up or a claim's outcome
// came since its last look.
func (h *Hub) park(w *waiter) {
	h.mu.Lock()
	w.parked = len(w.wake) == 0 && len(w.handed) == 0 && !w.claimed
	h.mu.Unlock()
}

// held reports whether a send holds w or left it an outcome: then w must
// take that outcome before it looks or leaves.
func (h *Hub) held(w *waiter) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return w.claimed || len(w.handed) > 0
}

// claim is a send's hold on one parked wait.
type claim struct {
	w *waiter
	o Handoff
}

// claimWaits claims, for each recipient of m, one parked wait on its inbox
// that takes m, and says how the send hands m to it.
func (h *Hub) claimWaits(m *Message, recips []string) []claim {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.waiters) == 0 {
		return nil
	}
	var (
		cs   []claim
		done map[string]bool // recipients claimed for, against a repeated name
	)
	for _, r := range recips {
		ws := h.waiters[inboxKey{m.Workspace, r}]
		if len(ws) == 0 || done[r] {
			continue
		}
		for w := range ws {
			if !w.parked || !w.admits(m) {
				continue
			}
			w.parked, w.claimed = false, true
			o := Handoff{Recipient: r, Reader: w.q.Reader, Via: w.q.Via, Now: h.now().UTC()}
			if o.Reader != "" {
				lease := h.lease
				if w.q.lease > 0 {
					lease = w.q.lease
				}
				o.LeaseUntil = o.Now.Add(lease)
			}
			cs = append(cs, claim{w, o})
			if len(recips) > 1 {
				if done == nil {
					done = make(map[string]bool)
				}
				done[r] = true
			}
			break
		}
	}
	return cs
}

func handoffs(cs []claim) []Handoff {
	if len(cs) == 0 {
		return nil
	}
	os := make([]Handoff, len(cs))
	for i, c := range cs {
		os[i] = c.o
	}
	return os
}

// settleClaims gives each claimed wait its copy of m, or, if the send
// failed (m nil), lets it look again.
func (h *Hub) settleClaims(cs []claim, m *Message) {
	if len(cs) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range cs {
		var d *Delivery
		if m != nil {
			mc := *m // each reader its own
			d = c.o.Delivery(&mc)
		}
		c.w.claimed = false
		c.w.handed <- d // never blocks: one outcome per claim, taken before the next
	}
}

// others returns the recipients that no claim covers: those to wake.
func others(recips []string, cs []claim) []string {
	if len(cs) == 0 {
		return recips
	}
	if len(recips) == 1 {
		return nil // the one recipient is claimed for
	}
	handed := make(map[string]bool, len(cs))
	for _, c := range cs {
		handed[c.o.Recipient] = true
	}
	out := make([]string, 0, len(recips)-len(cs))
	for _, r := range recips {
		if !handed[r] {
			out = append(out, r)
		}
	}
	return out
}

// received returns what a claim handed w, as a take would: a wait whose ctx
// ended meanwhile takes nothing with it.
func (h *Hub) received(ctx context.Context, d *Delivery) (*Delivery, error) {
	if err := context.Cause(ctx); err != nil && d.Reader != "" {
		h.giveBack(ctx, d)
		return nil, err
	}
	return d, nil
}

// giveBack puts a copy handed to a wait that ended without it back in its
// inbox, marked redelivered. A copy read at once (no reader) stays read.
func (h *Hub) giveBack(ctx context.Context, d *Delivery) {
	if d.Reader != "" {
		h.release(context.WithoutCancel(ctx), ReleaseQuery{Reader: d.Reader, MessageIDs: []string{d.MessageID}})
	}
}
