package hub

import (
	"context"
	"sync"
	"time"
)

// EventAgentRenamed: an agent took a new name (Rename). Agent is the new
// name, Previous the old one, which stays its alias.
const EventAgentRenamed EventKind = "agent.renamed"

// RenameRequest renames an agent: a client session whose name Parley
// derived (claude-myrepo-3f9a1c) takes one of its own choosing.
type RenameRequest struct {
	Workspace string
	Old, New  string
	// Role and Module, if set, replace the agent's; else it keeps its own
	// (DefaultRole for a name that never joined).
	Role, Module string
}

// Rename gives the agent Old the name New: New must be free (no agent has
// it, nor has it as an old name) and read differently from every other
// agent's (the look-alike rules of Join). Old need not have joined. What
// Old had follows (its mail, read or not, its groups and reservations;
// Store.RenameAgent), and Old stays an alias of New: mail to Old, and
// callers that speak as Old (Canonical), reach New. Sessions of Old move
// themselves (their doors and readers are theirs, not the hub's).
func (h *Hub) Rename(ctx context.Context, r RenameRequest) (*Agent, error) {
	const op = "rename"
	if err := ValidWorkspace(r.Workspace); err != nil {
		return nil, withOp(op, err)
	}
	for _, n := range []string{r.Old, r.New} {
		if err := ValidName("agent name", n); err != nil {
			return nil, withOp(op, err)
		}
	}
	if r.New == r.Old {
		return nil, Errorf(op, Invalid, "%q is the agent's name already", r.New)
	}
	// Only a session named after itself renames itself, and its new name
	// lives as long as it does; renaming is a call.
	a := &Agent{Workspace: r.Workspace, Name: r.New, Role: r.Role, Module: r.Module, Status: StatusReady, SessionBound: true}
	switch old, err := h.store.Agent(ctx, r.Workspace, r.Old); {
	case err == nil:
		a.Role, a.Module = first(r.Role, old.Role), first(r.Module, old.Module)
	case !IsNotFound(err):
		return nil, withOp(op, err)
	}
	if a.Role == "" {
		a.Role = DefaultRole
	}
	if err := ValidName("role", a.Role); err != nil {
		return nil, withOp(op, err)
	}
	if a.Module != "" {
		if err := ValidName("module", a.Module); err != nil {
			return nil, withOp(op, err)
		}
	}
	if err := checkNewName(r.New); err != nil {
		return nil, withOp(op, err)
	}
	if other, err := h.lookalikeOf(ctx, r.Workspace, r.New, r.Old); err != nil {
		return nil, withOp(op, err)
	} else if other != "" {
		return nil, Errorf(op, Conflict, "agent name %q looks like the existing agent %q (%s): choose a name that reads differently",
			r.New, other, describeRunes(r.New, other))
	}
	now := h.now().UTC()
	a.LastSeen = now
	if err := h.store.RenameAgent(ctx, r.Old, a, now); err != nil {
		if KindOf(err) == Conflict {
			return nil, Errorf(op, Conflict, "the name %q is taken: %v; choose another", r.New, err)
		}
		return nil, withOp(op, err)
	}
	h.renamed(r.Workspace)
	h.moveDoors(ctx, r.Workspace, r.Old, r.New)
	h.roles.set(inboxKey{r.Workspace, r.New}, a.Role, now)
	h.roles.set(inboxKey{r.Workspace, r.Old}, "", now)
	h.markSeen(inboxKey{r.Workspace, r.New}, now, true)
	// Its mail moved: a wait on the new name finds it.
	h.wakeLocal(r.Workspace, []string{r.New})
	h.publish(Event{Kind: EventAgentRenamed, Workspace: r.Workspace, Agent: r.New, Previous: r.Old, Role: a.Role, Status: string(a.Status)})
	return a, nil
}

// DoorClosedRenamed: the door's agent renamed itself; the door moved to
// the new name.
const DoorClosedRenamed = "moved: its agent renamed itself"

// moveDoors moves the open doors of old that this daemon's host registered
// (its client sessions' and their hooks') to new: each opens again for new,
// with its owner, and closes for old, so that the daemon's doorman writes
// new's letters through them.
func (h *Hub) moveDoors(ctx context.Context, ws, old, new string) {
	ds, err := h.store.Doors(ctx, ws, old, false)
	if err != nil {
		h.log.Warn("move the doors of a renamed agent", "agent", old, "err", err)
		return
	}
	for _, d := range ds {
		if d.Host != h.host {
			continue
		}
		moved := *d
		moved.Agent = new
		if _, err := h.OpenDoor(ctx, moved); err != nil {
			h.log.Warn("move a door of a renamed agent", "agent", old, "to", new, "err", err)
			continue
		}
		if _, err := h.CloseDoor(ctx, ws, d.ID, DoorClosedRenamed); err != nil {
			h.log.Warn("close the old door of a renamed agent", "agent", old, "err", err)
		}
	}
}

// first returns the first of vs that is not empty.
func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// lookalikeOf is lookalike with the agent self left out: an agent that
// renames itself may take a name that looks like the one it leaves.
func (h *Hub) lookalikeOf(ctx context.Context, ws, name, self string) (string, error) {
	as, err := h.store.Agents(ctx, ws)
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(as))
	for _, a := range as {
		if a.Name != self {
			names = append(names, a.Name)
		}
	}
	return confusableWith(name, names), nil
}

// Canonical returns the agent that name stands for in ws: the agent that
// had name before it renamed itself, or name itself. The doors call it for
// whom a caller speaks as (a session's hooks still derive its old name),
// and sends for a plain name.
func (h *Hub) Canonical(ctx context.Context, ws, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	as, err := h.aliases.of(ctx, h, ws)
	if err != nil {
		return "", withOp("aliases", err)
	}
	if to, ok := as[name]; ok {
		return to, nil
	}
	return name, nil
}

// aliasOwner returns the agent that has name as an old name in ws, or "".
func (h *Hub) aliasOwner(ctx context.Context, ws, name string) (string, error) {
	as, err := h.aliases.of(ctx, h, ws)
	if err != nil {
		return "", err
	}
	return as[name], nil
}

// renamed forgets what the caches knew of the names.
func (h *Hub) renamed(ws string) {
	h.aliases.forget(ws)
	h.recipients.forget()
}

// aliasCache keeps each workspace's aliases (Store.Aliases) for aliasTTL:
// most workspaces have none, and every session start and send to a plain
// name asks. A rename here clears it at once; one through another daemon
// sharing the store, when its event arrives (Relay), else within the TTL.
type aliasCache struct {
	mu sync.Mutex
	m  map[string]aliasEntry
}

type aliasEntry struct {
	aliases map[string]string
	at      time.Time
}

const aliasTTL = 30 * time.Second

func (c *aliasCache) of(ctx context.Context, h *Hub, ws string) (map[string]string, error) {
	now := h.now()
	c.mu.Lock()
	e, ok := c.m[ws]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < aliasTTL {
		return e.aliases, nil
	}
	as, err := h.store.Aliases(ctx, ws)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxRoles {
		c.m = make(map[string]aliasEntry)
	}
	c.m[ws] = aliasEntry{as, now}
	c.mu.Unlock()
	return as, nil
}

func (c *aliasCache) forget(ws string) {
	c.mu.Lock()
	delete(c.m, ws)
	c.mu.Unlock()
}
