package hub

import (
	"context"
	"time"
)

// Daemons that share a store (PostgreSQL) hold things for their clients in
// it: leased copies (a check's, a wait's, a claimed task's), reservations
// granted through them, agents seen through them. A daemon that dies (kill
// -9, a crashed machine) and stays down would strand them: its leases until
// they run out (30 minutes by default), its reservations until they expire,
// its agents shown present until their last-seen time ages out. So each
// daemon beats in the store, and a survivor that sees one miss its beats for
// its bound gives back what it held: its leased copies go back to their
// inboxes, marked redelivered (a claimed task back to its queue), its
// reservations end, its agents go offline.

// Liveness defaults and bounds.
const (
	// DefaultDeadAfter is how long a daemon may miss its heartbeat before
	// the others take it for dead.
	DefaultDeadAfter = 30 * time.Second
	MinDeadAfter     = time.Second
	MaxDeadAfter     = time.Hour
)

// LivenessStore is a Store that several daemons share and that keeps their
// heartbeats, by its own clock (the daemons' clocks may disagree).
type LivenessStore interface {
	// Beat records that this daemon is alive now and may be taken for dead
	// when deadAfter passes without another beat. It reports whether the
	// daemon was taken for dead since its last beat (reclaimed): what it
	// held was given back meanwhile. A daemon's first beat is never
	// reclaimed.
	Beat(ctx context.Context, deadAfter time.Duration) (reclaimed bool, err error)
	// Reclaim finds the other daemons whose last beat is older than their
	// bound and, for each in one transaction, gives back what it held: its
	// leased deliveries go back to their inboxes, Redelivered, in their
	// places (as Release), the reservations granted or renewed through it
	// end, the agents last seen through it are marked left (PresenceStore),
	// and the daemon is forgotten. Each is reclaimed once, across concurrent
	// calls.
	Reclaim(ctx context.Context) ([]*Reclaimed, error)
}

// Reclaimed is what a dead daemon held, given back.
type Reclaimed struct {
	Node     string    // the daemon: host and state directory
	LastBeat time.Time // its last heartbeat, by the store's clock
	// Deliveries went back to their inboxes (without their messages).
	Deliveries   []*Delivery
	Reservations []*Reservation // ended
	Agents       []AgentKey     // marked left
}

// AgentKey names an agent.
type AgentKey struct{ Workspace, Name string }

// beat records that this daemon lives, and keeps its fence (fence.go):
// a daemon that cannot beat for its bound tells its sessions that their
// claims may be lost and their reservations ended; when it beats again it
// learns whether the others reclaimed it meanwhile, and says so. A daemon
// taken for dead says again that its connected agents are here.
func (h *Hub) beat(ctx context.Context, ls LivenessStore) error {
	bctx, cancel := context.WithTimeout(ctx, max(h.deadAfter/2, time.Second))
	reclaimed, err := ls.Beat(bctx, h.deadAfter)
	cancel()
	now := h.now()
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("heartbeat", "err", err)
			if h.fence.missed(now, h.deadAfter) {
				h.tellCut(now)
			}
		}
		return err
	}
	was := h.fence.beaten(now, reclaimed)
	switch {
	case reclaimed:
		h.tellReclaimed(now)
	case was:
		h.tellRestored(now)
	}
	if !reclaimed {
		return nil
	}
	h.mu.Lock()
	var here []inboxKey
	for k, n := range h.sessions {
		if n > 0 {
			here = append(here, k)
		}
	}
	h.mu.Unlock()
	for _, k := range here {
		h.storeLeft(k.ws, k.name)
		h.mu.Lock()
		h.written[k] = time.Time{} // the next touch writes
		h.mu.Unlock()
		h.Touch(ctx, k.ws, k.name)
	}
	return nil
}

// ReclaimDead gives back what daemons taken for dead held (LivenessStore),
// and announces it: the copies back in their inboxes wake their waiters,
// and the others hear of the reservations ended and the agents gone. It
// returns what it reclaimed. Run calls it; it does nothing on a store that
// keeps no heartbeats.
func (h *Hub) ReclaimDead(ctx context.Context) ([]*Reclaimed, error) {
	ls, ok := h.store.(LivenessStore)
	if !ok {
		return nil, nil
	}
	if !h.fence.mayReclaim(h.now(), h.deadAfter) {
		// This daemon has not beaten without a break for a whole bound
		// (it just started, or the store was out of its reach): the
		// others may have been as cut off as it was, and their next beat
		// is still to come.
		return nil, nil
	}
	rs, err := ls.Reclaim(ctx)
	if err != nil {
		return nil, withOp("reclaim", err)
	}
	for _, r := range rs {
		var tasks, copies []string
		for _, d := range r.Deliveries {
			if IsQueue(d.Recipient) {
				tasks = append(tasks, d.Workspace+"/"+d.MessageID+" ("+d.Recipient+")")
			} else {
				copies = append(copies, d.Workspace+"/"+d.MessageID+" ("+d.Recipient+")")
			}
		}
		var paths []string
		for _, res := range r.Reservations {
			paths = append(paths, res.Workspace+"/"+res.Agent+":"+res.Pattern)
		}
		h.log.Warn("a daemon on the store is dead: gave back what it held", "node", r.Node, "last_beat", r.LastBeat,
			"deliveries", len(r.Deliveries), "reservations", len(r.Reservations), "agents", len(r.Agents),
			"tasks", tasks, "copies", copies, "reserved", paths)
		h.publishDeliveries(EventMessageRedelivered, r.Deliveries)
		h.wakeDeliveries(r.Deliveries)
		byWS := map[string][]*Reservation{}
		for _, res := range r.Reservations {
			byWS[res.Workspace] = append(byWS[res.Workspace], res)
		}
		for ws, res := range byWS {
			h.publish(Event{Kind: EventReservations, Workspace: ws, Change: "reclaimed", Reservations: res})
		}
		for _, a := range r.Agents {
			h.publish(Event{Kind: EventAgentLeft, Workspace: a.Workspace, Agent: a.Name})
		}
	}
	return rs, nil
}

// runLiveness beats, and reclaims dead daemons, until ctx ends: both every
// third of the bound, so that a dead daemon is found at most 4/3 of the
// bound after its last beat.
func (h *Hub) runLiveness(ctx context.Context, ls LivenessStore) {
	every := h.deadAfter / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if h.beat(ctx, ls) != nil {
				continue // a daemon that cannot beat reclaims nobody
			}
			if _, err := h.ReclaimDead(ctx); err != nil && ctx.Err() == nil {
				h.log.Warn("reclaim dead daemons", "err", err)
			}
		}
	}
}

// Beat records at once that this daemon is alive, for a daemon that starts:
// the others must not take it for dead before Run beats.
func (h *Hub) Beat(ctx context.Context) error {
	ls, ok := h.store.(LivenessStore)
	if !ok {
		return nil
	}
	return withOp("heartbeat", h.beat(ctx, ls))
}
