package hub

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"time"
)

// SendRequest is one message from an agent to an address.
type SendRequest struct {
	Workspace string
	From      string
	To        string
	Content   string
	Payload   json.RawMessage
	Priority  string
	ReplyTo   string
	Metadata  map[string]string
	// AckRequired asks each recipient to acknowledge the message.
	AckRequired bool
	// AckDeadline, if not zero, is when a missing acknowledgement becomes
	// overdue and the sender is told; it implies AckRequired.
	AckDeadline time.Time
	// TTL is the message's time to live (Message.ExpiresAt): 0 means the
	// hub's default (Options.TTL), NoTTL none.
	TTL time.Duration
	// Deliver is the delivery mode (ParseDeliverMode); "" means the
	// priority's default.
	Deliver string
	// Door is the way the message came in (Origin.Door); the hub attests
	// the rest of its origin itself.
	Door Door
	// IdempotencyKey, if set, names this send: a retry with the same key
	// sends nothing new and returns the first send's result
	// (idempotency.go).
	IdempotencyKey string
	// KeepUnjoined gives a message to a name that never joined the
	// default time to live, not UnjoinedTTL: Sidechat's inbox keeps a
	// message for an agent that does not exist yet (seed 001).
	KeepUnjoined bool
	// task is the task whose result this is (Complete).
	task string
}

// NoTTL, as a SendRequest's TTL, gives the message no time to live: it
// waits in the inbox until read, however long.
const NoTTL time.Duration = -1

// SendResult tells where a message went.
type SendResult struct {
	Message    *Message
	Recipients []string   // agent names, sorted
	Presence   []Presence // of each recipient when the message was stored, parallel to Recipients
	// Replayed says the send was a retry with an idempotency key: this is
	// the first send's result, and nothing new was sent.
	Replayed bool
	// Unjoined says the message went to a plain name that no agent has
	// (nor had): it waits in that name's inbox, for UnjoinedTTL unless
	// the send named a time to live (unjoined.go).
	Unjoined bool
}

// Send resolves the address and stores the message with one delivery per
// recipient, then wakes the recipients' waiters. It returns once the message is
// durable.
func (h *Hub) Send(ctx context.Context, r SendRequest) (*SendResult, error) {
	const op = "send"
	if r.IdempotencyKey != "" {
		if err := ValidIdempotencyKey(r.IdempotencyKey); err != nil {
			return nil, withOp(op, err)
		}
		if first, err := h.replaySend(ctx, r); err != nil || first != nil {
			return first, withOp(op, err)
		}
	}
	m, err := h.newMessage(ctx, r)
	if err != nil {
		return nil, withOp(op, err)
	}
	recips, agents, err := h.resolve(ctx, r.Workspace, r.To, r.From)
	if err != nil {
		return nil, withOp(op, err)
	}
	unjoined := h.unjoined(ctx, r.Workspace, r.To, recips)
	if unjoined && r.TTL == 0 && !r.KeepUnjoined && h.unjoinedTTL > 0 {
		// Nobody has the name: the sender learns it soon (unjoined.go).
		if end := m.CreatedAt.Add(h.unjoinedTTL); m.ExpiresAt.IsZero() || end.Before(m.ExpiresAt) {
			m.ExpiresAt = end
		}
	}
	res, err := h.deliver(ctx, m, recips, agents)
	if res != nil {
		res.Unjoined = unjoined
	}
	if KindOf(err) == Conflict && r.IdempotencyKey != "" {
		// A retry raced its first send, which won: its result.
		if first, ferr := h.replaySend(ctx, r); ferr == nil && first != nil {
			return first, nil
		}
	}
	return res, err
}

// deliver stores m for recips and wakes them, handing m straight to the
// waits parked on their inboxes (handoff.go). agents, if not nil, are the
// workspace's agents as resolving the address read them; presence uses them.
func (h *Hub) deliver(ctx context.Context, m *Message, recips []string, agents []*Agent) (*SendResult, error) {
	cs := h.claimWaits(m, recips)
	handed := handoffs(cs)
	publish := h.publish
	if s, ok := h.store.(SendStore); ok {
		as, err := s.SendMessage(ctx, m, recips, handed...)
		if err != nil {
			h.settleClaims(cs, nil)
			return nil, withOp("send", err)
		}
		agents = append([]*Agent{}, as...) // not nil: presence reads nothing more
		if _, ok := h.store.(NotifyingStore); ok {
			publish = h.publishLocal // the store told the other daemons
		}
	} else if err := h.store.CreateMessage(ctx, m, recips, handed...); err != nil {
		h.settleClaims(cs, nil)
		return nil, withOp("send", err)
	}
	h.wakeLocal(m.Workspace, others(recips, cs))
	for _, e := range SendEvents(m, recips, handed) {
		publish(e)
	}
	h.settleClaims(cs, m)
	if len(cs) > 0 {
		// A wait was handed m: let it run first, on this core, rather than
		// after this send's own bookkeeping and answer (or on another core
		// that must first be woken). Interleaved with the same build
		// without it, send->wake p50 was 2-3.5% lower, 8-9 blocks in 10.
		runtime.Gosched()
	}
	h.Touch(ctx, m.Workspace, m.From)
	return &SendResult{Message: m, Recipients: recips, Presence: h.presence(ctx, m.Workspace, recips, agents)}, nil
}

// newMessage validates a request and builds its message.
func (h *Hub) newMessage(ctx context.Context, r SendRequest) (*Message, error) {
	if err := ValidWorkspace(r.Workspace); err != nil {
		return nil, err
	}
	if r.From == "" {
		return nil, Errorf("", Invalid, "no sender: this session has no agent identity (pass --agent, or the Parley-Agent header)")
	}
	if err := ValidSender(r.From); err != nil {
		return nil, err
	}
	if strings.TrimSpace(r.Content) == "" && len(r.Payload) == 0 {
		return nil, Errorf("", Invalid, "content must not be empty")
	}
	if n := r.size(); n > h.maxContent {
		return nil, Errorf("", TooLarge, "message is %d bytes (content, payload, metadata and addresses); the limit is %d bytes", n, h.maxContent)
	}
	if len(r.Payload) > 0 && !json.Valid(r.Payload) {
		return nil, Errorf("", Invalid, "payload is not valid JSON")
	}
	if len(r.Metadata) > maxMetadataEntries {
		return nil, Errorf("", Invalid, "metadata has %d entries; the limit is %d", len(r.Metadata), maxMetadataEntries)
	}
	p, err := ParsePriority(r.Priority)
	if err != nil {
		return nil, err
	}
	mode, err := ParseDeliverMode(r.Deliver)
	if err != nil {
		return nil, err
	}
	now := h.now().UTC()
	if !r.AckDeadline.IsZero() && !r.AckDeadline.After(now) {
		return nil, Errorf("", Invalid, "ack deadline %s is not in the future", r.AckDeadline.UTC().Format(time.RFC3339))
	}
	ttl := r.TTL
	switch {
	case ttl == 0:
		ttl = h.ttl
	case ttl > MaxTTL:
		return nil, Errorf("", Invalid, "time to live %s is too long: at most %s", r.TTL, MaxTTL)
	case ttl < 0 && ttl != NoTTL:
		return nil, Errorf("", Invalid, "time to live %s is negative", r.TTL)
	}
	var expires time.Time
	if ttl > 0 {
		expires = now.Add(ttl)
	}
	m := &Message{
		ID: h.newID(now), Workspace: r.Workspace, From: r.From, To: r.To,
		Content: r.Content, Payload: r.Payload, Priority: p,
		ReplyTo: r.ReplyTo, Metadata: r.Metadata, CreatedAt: now,
		AckRequired: r.AckRequired || !r.AckDeadline.IsZero(), AckDeadline: r.AckDeadline.UTC(),
		ExpiresAt: expires, Deliver: mode,
		Origin:         Origin{Door: r.Door, Host: h.host, Task: r.task},
		IdempotencyKey: r.IdempotencyKey,
	}
	if r.Door != DoorDaemon {
		role, err := h.roles.of(ctx, h, r.Workspace, r.From)
		if err != nil {
			return nil, err
		}
		m.Origin.Role = role
	}
	m.ThreadID = m.ID
	if r.ReplyTo != "" {
		parent, err := h.store.Message(ctx, r.Workspace, r.ReplyTo)
		if err != nil {
			if IsNotFound(err) {
				return nil, Errorf("", NotFound, "reply_to: no message %q in this workspace", r.ReplyTo)
			}
			return nil, err
		}
		m.ThreadID = parent.ThreadID
	}
	return m, nil
}

// Resolve expands an address to the agent names it reaches in ws. from is the
// sender, left out of role, group and @everyone expansions. An address that
// reaches nobody is an error; a plain name always reaches its (maybe future) inbox.
func (h *Hub) Resolve(ctx context.Context, ws, addr, from string) ([]string, error) {
	names, _, err := h.resolve(ctx, ws, addr, from)
	return names, err
}

// resolve is Resolve that also returns the workspace's agents when it read
// them (every address but a plain name), so that presence need not read them again.
func (h *Hub) resolve(ctx context.Context, ws, addr, from string) ([]string, []*Agent, error) {
	a, err := ParseAddress(addr)
	if err != nil {
		return nil, nil, err
	}
	switch a.Kind {
	case AddrQueue:
		// The queue is the one recipient: its copy goes to whoever claims it.
		return []string{a.String()}, nil, nil
	case AddrComposite:
		as, err := h.store.Agents(ctx, ws)
		if err != nil {
			return nil, nil, err
		}
		for _, ag := range as {
			if NameHash(ws, ag.Name) == a.Name {
				return []string{ag.Name}, as, nil
			}
		}
		return nil, nil, Errorf("", NotFound, "no agent with id %q in this workspace", strings.TrimSpace(addr))
	case AddrEveryone, AddrGroupRole, AddrGroup, AddrRole:
		name := a.Name
		as, err := h.store.Agents(ctx, ws)
		if err != nil {
			return nil, nil, err
		}
		var names []string
		what := ""
		role := func() []string {
			var names []string
			for _, ag := range as {
				if ag.Role == name {
					names = append(names, ag.Name)
				}
			}
			return names
		}
		switch a.Kind {
		case AddrEveryone:
			what = "@everyone"
			// Not the agents whose client sessions ended (lifetime.go).
			present, err := h.withoutGone(ctx, ws, as)
			if err != nil {
				return nil, nil, err
			}
			for _, ag := range present {
				names = append(names, ag.Name)
			}
		case AddrRole:
			what = "role @" + name
			if names = role(); len(names) == 0 {
				return nil, nil, Errorf("", NotFound, "@role:%s: no agent has role %s in this workspace", name, name)
			}
		default: // a group, or for @name a group or a role
			g, err := h.store.Group(ctx, ws, name)
			switch {
			case err == nil:
				if a.Kind == AddrGroupRole && len(role()) > 0 {
					// A group that shares its name with a role in use
					// would take the role's mail: neither wins silently.
					return nil, nil, Errorf("", Conflict, "@%s is both a group and a role here: send to %s%s for the group or %s%s for the agents with role %s", name, GroupPrefix, name, RolePrefix, name, name)
				}
				what = "group @" + name
				names = expandMembers(g.Members, as)
			case !IsNotFound(err):
				return nil, nil, err
			case a.Kind == AddrGroup:
				return nil, nil, Errorf("", NotFound, "@group:%s: no group named %s in this workspace", name, name)
			default:
				what = "role @" + name
				if names = role(); len(names) == 0 {
					return nil, nil, Errorf("", NotFound, "@%s matches no group and no agent with that role in this workspace", name)
				}
			}
		}
		names = slices.DeleteFunc(names, func(n string) bool { return n == from })
		if len(names) == 0 {
			return nil, nil, Errorf("", NotFound, "%s reaches no agent other than the sender", what)
		}
		return names, as, nil
	default:
		if !strings.HasPrefix(a.Name, HumanPrefix) { // a person is never registered
			// An agent's old name reaches it.
			if to, err := h.Canonical(ctx, ws, a.Name); err != nil {
				return nil, nil, err
			} else if to != a.Name {
				return []string{to}, nil, nil
			}
			if err := h.checkRecipient(ctx, ws, a.Name); err != nil {
				return nil, nil, err
			}
		}
		return []string{a.Name}, nil, nil
	}
}

// expandMembers turns group members into sorted, unique agent names.
func expandMembers(members []Member, agents []*Agent) []string {
	set := map[string]bool{}
	for _, m := range members {
		switch m.Type {
		case MemberAgent:
			set[m.ID] = true
		case MemberRole:
			for _, a := range agents {
				if a.Role == m.ID {
					set[a.Name] = true
				}
			}
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// BroadcastRequest sends one message to every agent of a workspace but the sender.
type BroadcastRequest struct {
	Workspace string
	From      string
	Content   string
	Priority  string
	Metadata  map[string]string
	// ActiveOnly skips agents that are not active (seed 000's status "active").
	ActiveOnly bool
	// Exclude skips agents whose name or role is listed.
	Exclude []string
	// Door is the way it came in (Origin.Door).
	Door Door
}

// Broadcast sends to @everyone after applying the filters. No recipient left is
// not an error: the result has none.
func (h *Hub) Broadcast(ctx context.Context, r BroadcastRequest) (*SendResult, error) {
	const op = "broadcast"
	m, err := h.newMessage(ctx, SendRequest{Workspace: r.Workspace, From: r.From, To: "@" + Everyone,
		Content: r.Content, Priority: r.Priority, Metadata: r.Metadata, Door: r.Door})
	if err != nil {
		return nil, withOp(op, err)
	}
	as, err := h.store.Agents(ctx, r.Workspace)
	if err != nil {
		return nil, withOp(op, err)
	}
	present, err := h.withoutGone(ctx, r.Workspace, as)
	if err != nil {
		return nil, withOp(op, err)
	}
	var recips []string
	for _, a := range present {
		switch {
		case a.Name == r.From:
		case slices.Contains(r.Exclude, a.Name) || slices.Contains(r.Exclude, a.Role):
		case r.ActiveOnly && !h.active(a):
		default:
			recips = append(recips, a.Name)
		}
	}
	if len(recips) == 0 {
		return &SendResult{}, nil
	}
	return h.deliver(ctx, m, recips, as)
}

// Check consumes up to limit unread messages of the agent in inbox order and
