package hub

import (
	"context"
	"strings"
	"time"
)

// DefaultRole is the role of an agent that joins without one.
const DefaultRole = "agent"

// JoinRequest registers an agent.
type JoinRequest struct {
	Workspace string
	Name      string
	Role      string
	Module    string
	// AllowLookalike registers a new name even though it looks like an
	// existing agent's: for the admin to claim a name a look-alike
	// squatted first (bob, after bоb). Never from an agent token.
	AllowLookalike bool
	// SessionBound: the name is its client session's own, and the agent
	// lives as long as that session (Agent.SessionBound).
	SessionBound bool
	// Provisional: the session's start registers it, before any call; it
	// stays provisional until its first call (Called), and expires if its
	// session ends first. A join of an agent that made a call keeps it so.
	Provisional bool
}

// Join registers the agent or updates its role and module. A rejoin keeps its
// inbox and its self-reported status.
func (h *Hub) Join(ctx context.Context, r JoinRequest) (*Agent, error) {
	const op = "join"
	if err := ValidWorkspace(r.Workspace); err != nil {
		return nil, withOp(op, err)
	}
	if err := ValidName("agent name", r.Name); err != nil {
		return nil, withOp(op, err)
	}
	if r.Role == "" {
		r.Role = DefaultRole
	}
	if err := ValidName("role", r.Role); err != nil {
		return nil, withOp(op, err)
	}
	if r.Module != "" {
		if err := ValidName("module", r.Module); err != nil {
			return nil, withOp(op, err)
		}
	}
	now := h.now().UTC()
	a := &Agent{Workspace: r.Workspace, Name: r.Name, Role: r.Role, Module: r.Module,
		Status: StatusReady, CreatedAt: now, LastSeen: now, SessionBound: r.SessionBound, Provisional: r.Provisional}
	if old, err := h.store.Agent(ctx, r.Workspace, r.Name); err == nil {
		a.Status = old.Status
		a.CreatedAt = old.CreatedAt
		a.Provisional = r.Provisional && old.Provisional
	} else if !IsNotFound(err) {
		return nil, withOp(op, err)
	} else if owner, err := h.aliasOwner(ctx, r.Workspace, r.Name); err != nil {
		return nil, withOp(op, err)
	} else if owner != "" {
		return nil, Errorf(op, Conflict, "agent name %q is an old name of %q, which renamed itself: mail to it and sessions that speak as it reach %s; choose another name", r.Name, owner, owner)
	} else if err := h.checkNewName(ctx, r); err != nil {
		return nil, withOp(op, err)
	}
	if err := h.store.PutAgent(ctx, a); err != nil {
		return nil, withOp(op, err)
	}
	if a.Provisional {
		h.provisional.add(inboxKey{r.Workspace, r.Name})
	} else {
		h.provisional.take(inboxKey{r.Workspace, r.Name})
	}
	h.roles.set(inboxKey{r.Workspace, r.Name}, a.Role, now)
	h.recipients.forget() // a send to a look-alike of this name is refused from now on
	h.markSeen(inboxKey{r.Workspace, r.Name}, now, true)
	h.publish(Event{Kind: EventAgentJoined, Workspace: r.Workspace, Agent: a.Name, Role: a.Role, Status: string(a.Status)})
	return a, nil
}

// checkNewName refuses a new name that looks like an existing agent's (but
// for the admin, AllowLookalike), or is built to look like another
// (confusable.go).
func (h *Hub) checkNewName(ctx context.Context, r JoinRequest) error {
	if r.AllowLookalike {
		h.log.Warn("joining a name that may look like another agent's, as the admin asked", "workspace", r.Workspace, "name", r.Name)
	} else if err := h.checkConfusable(ctx, r.Workspace, r.Name); err != nil {
		return err
	}
	return checkNewName(r.Name)
}

// checkConfusable refuses a new name that looks like an existing agent's
// (confusable.go).
func (h *Hub) checkConfusable(ctx context.Context, ws, name string) error {
	other, err := h.lookalike(ctx, ws, name)
	if err != nil {
		return err
	}
	if other != "" {
		return Errorf("", Conflict, "agent name %q looks like the existing agent %q (%s): choose a name that reads differently, or, if %q squatted the name first, join it as the admin with `parley join --name %s --allow-lookalike`",
			name, other, describeRunes(name, other), other, name)
	}
	return nil
}

// Agent returns a registered agent.
func (h *Hub) Agent(ctx context.Context, ws, name string) (*Agent, error) {
	a, err := h.store.Agent(ctx, ws, name)
	if err != nil {
		if IsNotFound(err) {
			return nil, Errorf("agent", NotFound, "no agent named %q in workspace %q: register it with `parley join --name %s --role ROLE`", name, ws, name)
		}
		return nil, withOp("agent", err)
	}
	h.overlaySeen(a)
	return a, nil
}

// AgentView is an agent with its derived presence.
type AgentView struct {
	*Agent
	Active  bool // an open session, or seen within ActiveWindow
	Waiting int  // calls blocked in a wait for its next message, on this hub
	Health  HealthView
}

// Agents lists the agents of ws with their presence.
func (h *Hub) Agents(ctx context.Context, ws string) ([]AgentView, error) {
	as, err := h.store.Agents(ctx, ws)
	if err != nil {
		return nil, withOp("list agents", err)
	}
	out := make([]AgentView, len(as))
	for i, a := range as {
		h.overlaySeen(a)
		out[i] = AgentView{Agent: a, Active: h.active(a), Waiting: h.Waiters(ws, a.Name), Health: h.Health(a)}
	}
	return out, nil
}

// Active reports the presence of a.
func (h *Hub) Active(a *Agent) bool { return h.active(a) }

// active: an open session, or seen within ActiveWindow, but not an agent
// whose last session ended since (its client left, or died and lost its
// session): the window is for agents that come without a session (the CLI,
// hooks), and an agent that left is gone.
func (h *Hub) active(a *Agent) bool {
	k := inboxKey{a.Workspace, a.Name}
	h.mu.Lock()
	n := h.sessions[k]
	left := h.left[k]
	h.mu.Unlock()
	if n > 0 {
		return true
	}
	if _, ok := h.store.(PresenceStore); ok {
		// The store knows of every daemon's sessions: the agent may have
		// left through another, or come back through one since it left
		// here (no time stored). Our own time of the same leave is the
		// more precise one.
		if a.LeftAt.IsZero() || a.LeftAt.After(left) {
			left = a.LeftAt
		}
	}
	return h.now().Sub(a.LastSeen) < ActiveWindow && (left.IsZero() || a.LastSeen.After(left))
}

func (h *Hub) overlaySeen(a *Agent) {
	if a.Host == "" {
		a.Host = h.host
	}
	h.mu.Lock()
	if t, ok := h.seen[inboxKey{a.Workspace, a.Name}]; ok && t.After(a.LastSeen) {
		a.LastSeen = t
	}
	h.mu.Unlock()
}

// SetStatus records the agent's self-reported status.
func (h *Hub) SetStatus(ctx context.Context, ws, name string, st Status) error {
	if _, err := ParseStatus(string(st)); err != nil {
		return withOp("set status", err)
	}
	if err := h.store.SetAgentStatus(ctx, ws, name, st); err != nil {
		if IsNotFound(err) {
			return Errorf("set status", NotFound, "no agent named %q in workspace %q", name, ws)
		}
		return withOp("set status", err)
	}
	h.Touch(ctx, ws, name)
	h.publish(Event{Kind: EventAgentStatus, Workspace: ws, Agent: name, Status: string(st)})
	return nil
}

// Touch records that the agent was just seen. The store is written at most every
// touchEvery per agent, so a chatty agent costs no extra writes.
func (h *Hub) Touch(ctx context.Context, ws, name string) {
	if name == "" {
		return
	}
	now := h.now().UTC()
	if h.markSeen(inboxKey{ws, name}, now, false) {
		if err := h.store.TouchAgents(ctx, ws, map[string]time.Time{name: now}); err != nil {
			h.log.Warn("touch agent", "workspace", ws, "agent", name, "err", err)
		}
	}
}

// markSeen notes the time in memory and reports whether the store is due a write.
func (h *Hub) markSeen(k inboxKey, t time.Time, written bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen[k] = t
	if written || t.Sub(h.written[k]) >= touchEvery {
		h.written[k] = t
		return !written
	}
	return false
}

// Presence is what the hub knows of an agent's reachability.
type Presence string

// The presences.
const (
	// PresenceActive: an open MCP session or a blocked wait, or seen within ActiveWindow.
	PresenceActive Presence = "active"
	// PresenceOffline: registered, but not seen lately.
	PresenceOffline Presence = "offline"
	// PresenceUnregistered: no agent of that name (yet); its inbox keeps the message.
	PresenceUnregistered Presence = "unregistered"
	// PresenceUnknown: the agent's record could not be read.
	PresenceUnknown Presence = "unknown"
	// PresenceQueue: the recipient is a work queue; one claimant will take it.
	PresenceQueue Presence = "queue"
)

// presence reports each agent's presence. known, if not nil, are the
// workspace's agents as the caller read them; a name missing from known is
// unregistered. Agents with an open session are answered from memory alone.
func (h *Hub) presence(ctx context.Context, ws string, names []string, known []*Agent) []Presence {
	out := make([]Presence, len(names))
	pending := 0
	h.mu.Lock()
	for i, n := range names {
		if IsQueue(n) {
			out[i] = PresenceQueue
		} else if h.sessions[inboxKey{ws, n}] > 0 {
			out[i] = PresenceActive
		} else {
			pending++
		}
	}
	h.mu.Unlock()
	if pending == 0 {
		return out
	}
	lookup := func(name string) (*Agent, error) { return h.store.Agent(ctx, ws, name) }
	if _, ok := h.store.(PresenceStore); !ok {
		// The send that just resolved a plain name read its record
		// (checkRecipient): when the store is this daemon's alone, what
		// changes in it later (its last sighting) is in memory (overlaySeen).
		lookup = func(name string) (*Agent, error) {
			r, _, ok := h.recipients.get(inboxKey{ws, name}, h.now())
			switch {
			case !ok:
				return h.store.Agent(ctx, ws, name)
			case r.agent == nil:
				return nil, errNotJoined
			}
			a := *r.agent
			return &a, nil
		}
	}
	if known == nil && pending > 1 {
		as, err := h.store.Agents(ctx, ws)
		if err != nil {
			lookup = func(string) (*Agent, error) { return nil, err }
		}
		known = as
	}
	if known != nil {
		byName := make(map[string]*Agent, len(known))
		for _, a := range known {
			byName[a.Name] = a
		}
		lookup = func(name string) (*Agent, error) {
			if a := byName[name]; a != nil {
				return a, nil
			}
			return nil, Errorf("", NotFound, "no agent %q", name)
		}
	}
	for i, n := range names {
		if out[i] != "" {
			continue
		}
		a, err := lookup(n)
		switch {
		case IsNotFound(err):
			out[i] = PresenceUnregistered
		case err != nil:
			h.log.Warn("read presence", "workspace", ws, "agent", n, "err", err)
			out[i] = PresenceUnknown
		default:
			h.overlaySeen(a)
			if h.active(a) {
				out[i] = PresenceActive
			} else {
				out[i] = PresenceOffline
			}
		}
	}
	return out
}

// errNotJoined is a recipient's record that a send found missing.
var errNotJoined = Errorf("", NotFound, "not joined")

// Connected reports whether the agent has an open MCP session or a blocked
// wait right now, from memory alone.
func (h *Hub) Connected(ws, name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[inboxKey{ws, name}] > 0
}

// SessionOpened counts an open MCP session of the agent toward its presence.
func (h *Hub) SessionOpened(ws, name string) {
	if name == "" {
		return
	}
	h.mu.Lock()
	h.sessions[inboxKey{ws, name}]++
	first := h.sessions[inboxKey{ws, name}] == 1
	delete(h.left, inboxKey{ws, name})
	h.mu.Unlock()
	h.Touch(context.Background(), ws, name)
	if first {
		h.storeLeft(ws, name)
	}
}

// SessionClosed undoes SessionOpened. The agent's last session ending makes
// it offline at once (active).
func (h *Hub) SessionClosed(ws, name string) {
	if name == "" {
		return
	}
	k := inboxKey{ws, name}
	h.mu.Lock()
	last := false
	if h.sessions[k]--; h.sessions[k] <= 0 {
		delete(h.sessions, k)
		last = true
	}
	h.mu.Unlock()
	h.Touch(context.Background(), ws, name)
	if last {
		h.mu.Lock()
		if h.sessions[k] == 0 { // no session opened meanwhile
			h.left[k] = h.seen[k]
		}
		h.mu.Unlock()
		h.storeLeft(ws, name)
		h.publish(Event{Kind: EventAgentLeft, Workspace: ws, Agent: name})
		h.leftActivity(k)
	}
}

// storeLeft tells a PresenceStore whether the agent has left this daemon:
// when its last session ended, or nothing if it has a session again. It
// writes what holds when it runs, under leftMu, so that the last of racing
// opens and closes leaves the store right.
func (h *Hub) storeLeft(ws, name string) {
	ps, ok := h.store.(PresenceStore)
	if !ok {
		return
	}
	h.leftMu.Lock()
	defer h.leftMu.Unlock()
	k := inboxKey{ws, name}
	h.mu.Lock()
	var at time.Time
	if h.sessions[k] == 0 {
		at = h.left[k]
	}
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), storeLeftTimeout)
	defer cancel()
	if err := ps.SetAgentLeft(ctx, ws, name, at); err != nil {
		h.log.Warn("record agent left", "workspace", ws, "agent", name, "err", err)
	}
}

// storeLeftTimeout bounds storeLeft's write, which runs as sessions open and
// close, whatever their callers' contexts.
const storeLeftTimeout = 5 * time.Second

// TouchConnected records that every agent with an open session or a blocked
// wait here was just seen. Daemons sharing a store call it periodically, so
// that an agent connected to one daemon but quiet (a long wait) stays active
// in the eyes of the others, which know of its session only from the store.
func (h *Hub) TouchConnected(ctx context.Context) {
	h.mu.Lock()
	keys := make([]inboxKey, 0, len(h.sessions))
	for k, n := range h.sessions {
		if n > 0 {
			keys = append(keys, k)
		}
	}
	h.mu.Unlock()
	for _, k := range keys {
		h.Touch(ctx, k.ws, k.name)
	}
}

// CheckTokenName refuses an agent token for a name that could not join:
// reserved ("parley", a person's human:NAME), an old name of another agent
// (an alias: mail to it reaches that agent), one built to look like another,
// or one that looks like an agent of ws. A token for an agent that has
// joined is fine.
func (h *Hub) CheckTokenName(ctx context.Context, ws, name string) error {
	const op = "create token"
	if strings.HasPrefix(name, HumanPrefix) {
		return Errorf(op, Invalid, "%q is a person's address: a token speaks for an agent", name)
	}
	if err := ValidName("agent name", name); err != nil {
		return withOp(op, err)
	}
	switch _, err := h.store.Agent(ctx, ws, name); {
	case err == nil && name != NoticeSender:
		return nil
	case err != nil && !IsNotFound(err):
		return withOp(op, err)
	}
	if owner, err := h.aliasOwner(ctx, ws, name); err != nil {
		return withOp(op, err)
	} else if owner != "" {
		return Errorf(op, Conflict, "agent name %q is an old name of %q, which renamed itself: a token for it would speak as %s's old name; make the token for %s", name, owner, owner, owner)
	}
	if err := checkNewName(name); err != nil {
		return withOp(op, err)
	}
	return withOp(op, h.checkConfusable(ctx, ws, name))
}
