package hub

import (
	"context"
	"sync"
	"time"
)

// How long an agent lives. An agent someone named (parley join, --agent,
// an identity file) lasts until it is forgotten (Forget). An agent named
// after its client session (Agent.SessionBound) lives with that session:
// once none of its sessions or doors is open it is gone, and @everyone
// skips it. One that its session's start registered (so that it was
// reachable from its first second) and that never made a call since
// (Agent.Provisional) expires ProvisionalGrace after its session ended: a
// session opened and closed without a word leaves no ghost.

// EventAgentForgotten: an agent was forgotten (Forget); Reason says why.
const EventAgentForgotten EventKind = "agent.forgotten"

// DefaultProvisionalGrace is how long after its session ended a
// provisional agent is kept, for the session to come back (a restart of
// its MCP server, of the daemon).
const DefaultProvisionalGrace = 10 * time.Minute

// Reasons an agent is forgotten, which its bounced copies carry.
const (
	ForgetByPerson  = "the agent was forgotten (parley agents forget)"
	ForgetNeverUsed = "the agent's session ended before it made a call"
)

// provisionals are the provisional agents this hub knows of, by when it
// last saw them registered; loaded from the store at the first sweep.
type provisionals struct {
	mu     sync.Mutex
	loaded bool
	m      map[inboxKey]struct{}
}

func (p *provisionals) add(k inboxKey) {
	p.mu.Lock()
	if p.m == nil {
		p.m = map[inboxKey]struct{}{}
	}
	p.m[k] = struct{}{}
	p.mu.Unlock()
}

// take removes k and reports whether it was there.
func (p *provisionals) take(k inboxKey) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.m[k]
	delete(p.m, k)
	return ok
}

// Called notes that the agent made a call (a Parley tool call, a send, a
// read): a provisional agent becomes lasting as long as its session. It
// costs nothing for an agent that is not provisional.
func (h *Hub) Called(ctx context.Context, ws, name string) {
	if name == "" || !h.provisional.take(inboxKey{ws, name}) {
		return
	}
	a, err := h.store.Agent(ctx, ws, name)
	if err != nil || !a.Provisional {
		return
	}
	a.Provisional = false
	if err := h.store.PutAgent(ctx, a); err != nil {
		h.log.Warn("record an agent's first call", "workspace", ws, "agent", name, "err", err)
		h.provisional.add(inboxKey{ws, name})
	}
}

// Gone reports whether a is an agent named after its client session whose
// sessions and doors are all closed: nothing of it is left to read mail.
// open lists the workspace's agents that have an open door.
//
// Once its last session here has ended, what the session's own processes
// do afterwards (its SessionEnd hook reports it offline, its shell runs a
// command) keeps it present for ActiveWindow, but is no session: it is
// gone at once. An agent this daemon never saw leave (a restarted daemon;
// on a shared store, one whose session another daemon holds) is gone once
// it is not active.
func (h *Hub) gone(a *Agent, open map[string]bool) bool {
	if !a.SessionBound || open[a.Name] || h.Waiters(a.Workspace, a.Name) > 0 {
		return false
	}
	k := inboxKey{a.Workspace, a.Name}
	h.mu.Lock()
	n := h.sessions[k]
	_, left := h.left[k]
	h.mu.Unlock()
	if n > 0 {
		return false
	}
	if _, shared := h.store.(PresenceStore); left && (!shared || !a.LeftAt.IsZero()) {
		return true
	}
	h.overlaySeen(a)
	return !h.active(a)
}

// openDoors returns the agents of ws with an open door.
func (h *Hub) openDoors(ctx context.Context, ws string) (map[string]bool, error) {
	ds, err := h.store.Doors(ctx, ws, "", false)
	if err != nil {
		return nil, err
	}
	open := make(map[string]bool, len(ds))
	for _, d := range ds {
		open[d.Agent] = true
	}
	return open, nil
}

// withoutGone drops the agents that are gone (Gone) from as.
func (h *Hub) withoutGone(ctx context.Context, ws string, as []*Agent) ([]*Agent, error) {
	bound := false
	for _, a := range as {
		bound = bound || a.SessionBound
	}
	if !bound {
		return as, nil
	}
	open, err := h.openDoors(ctx, ws)
	if err != nil {
		return nil, err
	}
	out := make([]*Agent, 0, len(as))
	for _, a := range as {
		if !h.gone(a, open) {
			out = append(out, a)
		}
	}
	return out, nil
}

// Forget removes the agent name of ws: its record, group memberships,
// reservations and old names go, its doors close, and its copies not yet
// read bounce back to their senders with the reason (each sender is told
// once). Its sent messages stay in the history. An agent with a live
// session here cannot be forgotten (Conflict): the session would speak as
// a name nobody has.
func (h *Hub) Forget(ctx context.Context, ws, name, reason string) ([]*Delivery, error) {
	const op = "forget"
	if err := ValidName("agent name", name); err != nil {
		return nil, withOp(op, err)
	}
	if h.Connected(ws, name) {
		return nil, Errorf(op, Conflict, "agent %q has a live session: end it first (its client, or `parley doors close` for its doors)", name)
	}
	if _, err := h.store.Agent(ctx, ws, name); err != nil {
		if IsNotFound(err) {
			return nil, Errorf(op, NotFound, "no agent named %q in workspace %q", name, ws)
		}
		return nil, withOp(op, err)
	}
	if ds, err := h.store.Doors(ctx, ws, name, true); err == nil {
		for _, d := range ds {
			if d.Open() || d.Dormant() {
				h.CloseDoor(ctx, ws, d.ID, DoorClosedForgotten)
			}
		}
	}
	now := h.now().UTC()
	bounced, err := h.store.ForgetAgent(ctx, ws, name, reason, now)
	if err != nil {
		return nil, withOp(op, err)
	}
	k := inboxKey{ws, name}
	h.provisional.take(k)
	h.roles.set(k, "", now)
	h.renamed(ws) // aliases and recipients' records
	h.mu.Lock()
	delete(h.seen, k)
	delete(h.written, k)
	delete(h.left, k)
	h.mu.Unlock()
	h.publishDeliveries(EventMessageBounced, bounced)
	h.publish(Event{Kind: EventAgentForgotten, Workspace: ws, Agent: name, Reason: reason})
	byMsg := map[string][]*Delivery{}
	var order []*Message
	for _, d := range bounced {
		if _, ok := byMsg[d.MessageID]; !ok && d.Message != nil {
			order = append(order, d.Message)
		}
		byMsg[d.MessageID] = append(byMsg[d.MessageID], d)
	}
	for _, m := range order {
		h.noticeBounce(ctx, m, byMsg[m.ID])
	}
	return bounced, nil
}

// DoorClosedForgotten: the door's agent was forgotten.
const DoorClosedForgotten = "agent forgotten"

// expireProvisional forgets the provisional agents whose sessions ended
// more than the grace ago: nothing of them is open, and they never made a
// call. The first round reads them from the store (they may be a previous
// daemon's); after that, the hub knows of those it registers.
func (h *Hub) expireProvisional(ctx context.Context, now time.Time) {
	p := &h.provisional
	p.mu.Lock()
	load := !p.loaded
	p.loaded = true
	p.mu.Unlock()
	if load {
		wss, err := h.store.Workspaces(ctx)
		if err != nil {
			h.log.Warn("find provisional agents", "err", err)
			return
		}
		for _, ws := range wss {
			as, err := h.store.Agents(ctx, ws)
			if err != nil {
				continue
			}
			for _, a := range as {
				if a.Provisional {
					p.add(inboxKey{ws, a.Name})
				}
			}
		}
	}
	p.mu.Lock()
	keys := make([]inboxKey, 0, len(p.m))
	for k := range p.m {
		keys = append(keys, k)
	}
	p.mu.Unlock()
	for _, k := range keys {
		a, err := h.store.Agent(ctx, k.ws, k.name)
		switch {
		case IsNotFound(err) || err == nil && !a.Provisional:
			p.take(k)
			continue
		case err != nil:
			continue
		}
		h.overlaySeen(a)
		if h.Connected(k.ws, k.name) || h.Waiters(k.ws, k.name) > 0 || now.Sub(a.LastSeen) < h.provisionalGrace {
			continue
		}
		if ds, err := h.store.Doors(ctx, k.ws, k.name, false); err != nil || len(ds) > 0 {
			continue
		}
		if _, err := h.Forget(ctx, k.ws, k.name, ForgetNeverUsed); err != nil {
			h.log.Warn("expire a provisional agent", "workspace", k.ws, "agent", k.name, "err", err)
			continue
		}
		h.log.Info("forgot an agent whose session ended before it made a call", "workspace", k.ws, "agent", k.name)
	}
}
