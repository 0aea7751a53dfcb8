package hub

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Defaults and limits.
const (
	DefaultMaxContent  = 256 << 10 // bytes of content plus payload in one message
	DefaultWaitTimeout = 300 * time.Second
	MaxWaitTimeout     = 600 * time.Second
	ActiveWindow       = 2 * time.Minute // seen this recently counts as active
	DefaultCheckLimit  = 50
	MaxCheckLimit      = 1000
	maxMetadataEntries = 64

	// touchEvery bounds how often a busy agent's last-seen time is written.
	touchEvery = 20 * time.Second
)

// Options configure a Hub. The zero value means defaults.
type Options struct {
	Logger     *slog.Logger     // nil: discard
	MaxContent int              // bytes; 0: DefaultMaxContent
	Now        func() time.Time // nil: time.Now
}

// Hub is the message bus of every workspace the daemon serves.
type Hub struct {
	store      Store
	log        *slog.Logger
	now        func() time.Time
	maxContent int

	mu       sync.Mutex
	waiters  map[inboxKey]map[chan struct{}]struct{}
	sessions map[inboxKey]int       // open MCP sessions per agent
	seen     map[inboxKey]time.Time // last seen, in memory, fresher than the store
	written  map[inboxKey]time.Time // last-seen time last written to the store

	entropyMu sync.Mutex
	entropy   *ulid.MonotonicEntropy

	subsMu  sync.RWMutex
	subs    map[int]func(Event)
	nextSub int
}

type inboxKey struct{ ws, name string }

// New returns a hub that keeps its state in store.
func New(store Store, opts *Options) *Hub {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.MaxContent <= 0 {
		o.MaxContent = DefaultMaxContent
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Hub{
		store:      store,
		log:        o.Logger,
		now:        o.Now,
		maxContent: o.MaxContent,
		waiters:    make(map[inboxKey]map[chan struct{}]struct{}),
		sessions:   make(map[inboxKey]int),
		seen:       make(map[inboxKey]time.Time),
		written:    make(map[inboxKey]time.Time),
		entropy:    ulid.Monotonic(rand.Reader, 0),
	}
}

// Store returns the hub's store.
func (h *Hub) Store() Store { return h.store }

// MaxContent is the largest message (content plus payload) the hub accepts.
func (h *Hub) MaxContent() int { return h.maxContent }

func (h *Hub) newID(t time.Time) string {
	h.entropyMu.Lock()
	defer h.entropyMu.Unlock()
	return ulid.MustNew(ulid.Timestamp(t), h.entropy).String()
}

// ---- agents and presence ----

// JoinRequest registers an agent.
type JoinRequest struct {
	Workspace string
	Name      string
	Role      string
	Module    string
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
		r.Role = "agent"
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
		Status: StatusReady, CreatedAt: now, LastSeen: now}
	if old, err := h.store.Agent(ctx, r.Workspace, r.Name); err == nil {
		a.Status = old.Status
		a.CreatedAt = old.CreatedAt
	} else if !IsNotFound(err) {
		return nil, withOp(op, err)
	}
	if err := h.store.PutAgent(ctx, a); err != nil {
		return nil, withOp(op, err)
	}
	h.markSeen(inboxKey{r.Workspace, r.Name}, now, true)
	h.publish(Event{Kind: EventAgentJoined, Workspace: r.Workspace, Agent: a.Name, Role: a.Role, Status: string(a.Status)})
	return a, nil
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
	Active bool // an open session, or seen within ActiveWindow
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
		out[i] = AgentView{Agent: a, Active: h.active(a)}
	}
	return out, nil
}

// Active reports the presence of a.
func (h *Hub) Active(a *Agent) bool { return h.active(a) }

func (h *Hub) active(a *Agent) bool {
	h.mu.Lock()
	n := h.sessions[inboxKey{a.Workspace, a.Name}]
	h.mu.Unlock()
	return n > 0 || h.now().Sub(a.LastSeen) < ActiveWindow
}

func (h *Hub) overlaySeen(a *Agent) {
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
	h.mu.Unlock()
	h.Touch(context.Background(), ws, name)
}

// SessionClosed undoes SessionOpened.
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
		h.publish(Event{Kind: EventAgentLeft, Workspace: ws, Agent: name})
	}
}

// ---- messages ----

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
}

// SendResult tells where a message went.
type SendResult struct {
	Message    *Message
	Recipients []string // agent names, sorted
}

// Send resolves the address and stores the message with one delivery per
// recipient, then wakes the recipients' waiters. It returns once the message is
// durable.
func (h *Hub) Send(ctx context.Context, r SendRequest) (*SendResult, error) {
	const op = "send"
	m, err := h.newMessage(ctx, r)
	if err != nil {
		return nil, withOp(op, err)
	}
	recips, err := h.Resolve(ctx, r.Workspace, r.To, r.From)
	if err != nil {
		return nil, withOp(op, err)
	}
	return h.deliver(ctx, m, recips)
}

func (h *Hub) deliver(ctx context.Context, m *Message, recips []string) (*SendResult, error) {
	if err := h.store.CreateMessage(ctx, m, recips); err != nil {
		return nil, withOp("send", err)
	}
	h.notify(m.Workspace, recips)
	h.Touch(ctx, m.Workspace, m.From)
	h.publish(Event{Kind: EventMessageSent, Workspace: m.Workspace, Agent: m.From, Message: m, Recipients: recips})
	return &SendResult{Message: m, Recipients: recips}, nil
}

// newMessage validates a request and builds its message.
func (h *Hub) newMessage(ctx context.Context, r SendRequest) (*Message, error) {
	if err := ValidWorkspace(r.Workspace); err != nil {
		return nil, err
	}
	if r.From == "" {
		return nil, Errorf("", Invalid, "no sender: this session has no agent identity (pass --agent, or the Parley-Agent header)")
	}
	if err := ValidName("sender", r.From); err != nil {
		return nil, err
	}
	if strings.TrimSpace(r.Content) == "" && len(r.Payload) == 0 {
		return nil, Errorf("", Invalid, "content must not be empty")
	}
	if n := len(r.Content) + len(r.Payload); n > h.maxContent {
		return nil, Errorf("", TooLarge, "message is %d bytes; the limit is %d bytes", n, h.maxContent)
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
	now := h.now().UTC()
	m := &Message{
		ID: h.newID(now), Workspace: r.Workspace, From: r.From, To: r.To,
		Content: r.Content, Payload: r.Payload, Priority: p,
		ReplyTo: r.ReplyTo, Metadata: r.Metadata, CreatedAt: now,
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
	a, err := ParseAddress(addr)
	if err != nil {
		return nil, err
	}
	switch a.Kind {
	case AddrComposite:
		as, err := h.store.Agents(ctx, ws)
		if err != nil {
			return nil, err
		}
		for _, ag := range as {
			if NameHash(ws, ag.Name) == a.Name {
				return []string{ag.Name}, nil
			}
		}
		return nil, Errorf("", NotFound, "no agent with id %q in this workspace", strings.TrimSpace(addr))
	case AddrEveryone, AddrGroupRole:
		name := a.Name
		as, err := h.store.Agents(ctx, ws)
		if err != nil {
			return nil, err
		}
		var names []string
		what := ""
		if a.Kind == AddrEveryone {
			what = "@everyone"
			for _, ag := range as {
				names = append(names, ag.Name)
			}
		} else if g, err := h.store.Group(ctx, ws, name); err == nil {
			what = "group @" + name
			names = expandMembers(g.Members, as)
		} else if !IsNotFound(err) {
			return nil, err
		} else {
			what = "role @" + name
			for _, ag := range as {
				if ag.Role == name {
					names = append(names, ag.Name)
				}
			}
			if len(names) == 0 {
				return nil, Errorf("", NotFound, "@%s matches no group and no agent with that role in this workspace", name)
			}
		}
		names = slices.DeleteFunc(names, func(n string) bool { return n == from })
		if len(names) == 0 {
			return nil, Errorf("", NotFound, "%s reaches no agent other than the sender", what)
		}
		return names, nil
	default:
		return []string{a.Name}, nil
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
}

// Broadcast sends to @everyone after applying the filters. No recipient left is
// not an error: the result has none.
func (h *Hub) Broadcast(ctx context.Context, r BroadcastRequest) (*SendResult, error) {
	const op = "broadcast"
	m, err := h.newMessage(ctx, SendRequest{Workspace: r.Workspace, From: r.From, To: "@" + Everyone,
		Content: r.Content, Priority: r.Priority, Metadata: r.Metadata})
	if err != nil {
		return nil, withOp(op, err)
	}
	as, err := h.store.Agents(ctx, r.Workspace)
	if err != nil {
		return nil, withOp(op, err)
	}
	var recips []string
	for _, a := range as {
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
	return h.deliver(ctx, m, recips)
}

// Check consumes up to limit unread messages of the agent in inbox order and
// reports how many stay unread.
func (h *Hub) Check(ctx context.Context, ws, agent string, limit int) (msgs []*Message, remaining int, err error) {
	const op = "check messages"
	if agent == "" {
		return nil, 0, Errorf(op, Invalid, "no agent identity: pass --agent, or the Parley-Agent header")
	}
	if limit <= 0 {
		limit = DefaultCheckLimit
	}
	limit = min(limit, MaxCheckLimit)
	h.Touch(ctx, ws, agent)
	msgs, err = h.store.Consume(ctx, ws, agent, 3, limit)
	if err != nil {
		return nil, 0, withOp(op, err)
	}
	remaining, err = h.store.Unread(ctx, ws, agent, 3)
	if err != nil {
		return nil, 0, withOp(op, err)
	}
	return msgs, remaining, nil
}

// WaitRequest blocks for the next message of an agent.
type WaitRequest struct {
	Workspace string
	Agent     string
	Timeout   time.Duration // 0: DefaultWaitTimeout; at most MaxWaitTimeout
	Filter    PriorityFilter
	// Progress, if set, is called about every ProgressEvery while waiting.
	Progress      func(waited time.Duration)
	ProgressEvery time.Duration // 0: 5s
}

// ValidTimeout checks a wait timeout given in seconds; 0 means the default.
func ValidTimeout(seconds int) (time.Duration, error) {
	if seconds < 0 || time.Duration(seconds)*time.Second > MaxWaitTimeout {
		return 0, Errorf("", Invalid, "timeout %d s is out of range: want 0 to %d seconds", seconds, int(MaxWaitTimeout/time.Second))
	}
	if seconds == 0 {
		return DefaultWaitTimeout, nil
	}
	return time.Duration(seconds) * time.Second, nil
}

// Wait consumes the agent's next message that passes the filter, blocking until
// one arrives, the timeout passes (nil message, nil error) or ctx ends. It
// registers interest before it looks, so a message sent at any moment wakes it.
func (h *Hub) Wait(ctx context.Context, r WaitRequest) (*Message, error) {
	const op = "wait"
	if r.Agent == "" {
		return nil, Errorf(op, Invalid, "no agent identity: pass --agent, or the Parley-Agent header")
	}
	if r.Timeout <= 0 {
		r.Timeout = DefaultWaitTimeout
	}
	if r.Timeout > MaxWaitTimeout {
		return nil, Errorf(op, Invalid, "timeout %s is over the maximum %s", r.Timeout, MaxWaitTimeout)
	}
	key := inboxKey{r.Workspace, r.Agent}
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.waiters[key] == nil {
		h.waiters[key] = make(map[chan struct{}]struct{})
	}
	h.waiters[key][ch] = struct{}{}
	h.sessions[key]++ // a blocked waiter is present
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.waiters[key], ch)
		if len(h.waiters[key]) == 0 {
			delete(h.waiters, key)
		}
		if h.sessions[key]--; h.sessions[key] <= 0 {
			delete(h.sessions, key)
		}
		h.mu.Unlock()
		h.Touch(context.Background(), r.Workspace, r.Agent)
	}()
	h.Touch(ctx, r.Workspace, r.Agent)

	start := h.now()
	timer := time.NewTimer(r.Timeout)
	defer timer.Stop()
	var tick <-chan time.Time
	if r.Progress != nil {
		every := r.ProgressEvery
		if every <= 0 {
			every = 5 * time.Second
		}
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		msgs, err := h.store.Consume(ctx, r.Workspace, r.Agent, r.Filter.MaxRank(), 1)
		if err != nil {
			return nil, withOp(op, err)
		}
		if len(msgs) > 0 {
			return msgs[0], nil
		}
	sleep:
		select {
		case <-ch:
		case <-timer.C:
			return nil, nil
		case <-ctx.Done():
			return nil, withOp(op, context.Cause(ctx))
		case <-tick:
			r.Progress(h.now().Sub(start))
			goto sleep
		}
	}
}

// notify wakes every waiter of the recipients' inboxes.
func (h *Hub) notify(ws string, recips []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, name := range recips {
		for ch := range h.waiters[inboxKey{ws, name}] {
			select {
			case ch <- struct{}{}:
			default: // already signalled
			}
		}
	}
}

// Waiters counts the blocked waits on the agent's inbox.
func (h *Hub) Waiters(ws, agent string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.waiters[inboxKey{ws, agent}])
}

// Peek lists unread messages without consuming them.
func (h *Hub) Peek(ctx context.Context, ws, agent string, limit int) ([]*Message, int, error) {
	if limit <= 0 {
		limit = DefaultCheckLimit
	}
	msgs, err := h.store.Peek(ctx, ws, agent, min(limit, MaxCheckLimit))
	if err != nil {
		return nil, 0, withOp("peek", err)
	}
	n, err := h.store.Unread(ctx, ws, agent, 3)
	if err != nil {
		return nil, 0, withOp("peek", err)
	}
	return msgs, n, nil
}

// Unread counts the agent's unread messages.
func (h *Hub) Unread(ctx context.Context, ws, agent string) (int, error) {
	n, err := h.store.Unread(ctx, ws, agent, 3)
	return n, withOp("unread", err)
}

// ClearInbox marks every unread message of the agent read.
func (h *Hub) ClearInbox(ctx context.Context, ws, agent string) (int, error) {
	n, err := h.store.ClearInbox(ctx, ws, agent)
	return n, withOp("clear inbox", err)
}

// History lists messages of ws, newest first.
func (h *Hub) History(ctx context.Context, ws string, q HistoryQuery) ([]*Message, error) {
	if q.Limit <= 0 || q.Limit > MaxCheckLimit {
		q.Limit = 100
	}
	ms, err := h.store.History(ctx, ws, q)
	return ms, withOp("history", err)
}

// Message returns one message.
func (h *Hub) Message(ctx context.Context, ws, id string) (*Message, error) {
	m, err := h.store.Message(ctx, ws, id)
	return m, withOp("get message", err)
}

// Workspaces lists the workspaces with state.
func (h *Hub) Workspaces(ctx context.Context) ([]string, error) {
	ws, err := h.store.Workspaces(ctx)
	return ws, withOp("list workspaces", err)
}

// ---- groups ----

// CreateGroup makes an empty group. @everyone is built in and cannot be made.
func (h *Hub) CreateGroup(ctx context.Context, ws, name, description, by string) (*Group, error) {
	const op = "create group"
	name = strings.TrimPrefix(name, "@")
	if err := ValidName("group name", name); err != nil {
		return nil, withOp(op, err)
	}
	if name == Everyone {
		return nil, Errorf(op, Conflict, "@everyone is built in: it always holds every agent")
	}
	if len(description) > 1024 {
		return nil, Errorf(op, Invalid, "description is too long: at most 1024 bytes")
	}
	g := &Group{Workspace: ws, Name: name, Description: description, CreatedBy: by, CreatedAt: h.now().UTC()}
	if err := h.store.CreateGroup(ctx, g); err != nil {
		if KindOf(err) == Conflict {
			return nil, Errorf(op, Conflict, "group %q exists already", name)
		}
		return nil, withOp(op, err)
	}
	h.publish(Event{Kind: EventGroupChanged, Workspace: ws, Group: name, Change: "created"})
	return g, nil
}

// DeleteGroup removes a group; @everyone is protected.
func (h *Hub) DeleteGroup(ctx context.Context, ws, name string) error {
	const op = "delete group"
	name = strings.TrimPrefix(name, "@")
	if name == Everyone {
		return Errorf(op, Forbidden, "@everyone is built in and cannot be deleted")
	}
	if err := h.store.DeleteGroup(ctx, ws, name); err != nil {
		return groupErr(op, name, err)
	}
	h.publish(Event{Kind: EventGroupChanged, Workspace: ws, Group: name, Change: "deleted"})
	return nil
}

// ParseMember validates a member type and id.
func ParseMember(typ, id string) (Member, error) {
	m := Member{Type: MemberType(typ), ID: id}
	if m.Type != MemberAgent && m.Type != MemberRole {
		return m, Errorf("", Invalid, "invalid member_type %q: want agent or role", typ)
	}
	if err := ValidName(typ+" name", id); err != nil {
		return m, err
	}
	return m, nil
}

// AddGroupMember adds an agent or a role to a group.
func (h *Hub) AddGroupMember(ctx context.Context, ws, group string, m Member) error {
	const op = "add group member"
	group = strings.TrimPrefix(group, "@")
	if group == Everyone {
		return Errorf(op, Forbidden, "@everyone is built in: its members are every agent")
	}
	if _, err := ParseMember(string(m.Type), m.ID); err != nil {
		return withOp(op, err)
	}
	if err := h.store.AddGroupMember(ctx, ws, group, m); err != nil {
		return groupErr(op, group, err)
	}
	h.publish(Event{Kind: EventGroupChanged, Workspace: ws, Group: group, Change: "member_added"})
	return nil
}

// RemoveGroupMember removes an agent or a role from a group.
func (h *Hub) RemoveGroupMember(ctx context.Context, ws, group string, m Member) error {
	const op = "remove group member"
	group = strings.TrimPrefix(group, "@")
	if group == Everyone {
		return Errorf(op, Forbidden, "@everyone is built in: its members are every agent")
	}
	if _, err := ParseMember(string(m.Type), m.ID); err != nil {
		return withOp(op, err)
	}
	if err := h.store.RemoveGroupMember(ctx, ws, group, m); err != nil {
		if IsNotFound(err) {
			if _, gerr := h.store.Group(ctx, ws, group); IsNotFound(gerr) {
				return groupErr(op, group, gerr)
			}
			return Errorf(op, NotFound, "%s %q is not a member of group %q", m.Type, m.ID, group)
		}
		return withOp(op, err)
	}
	h.publish(Event{Kind: EventGroupChanged, Workspace: ws, Group: group, Change: "member_removed"})
	return nil
}

// Group returns a group; @everyone is synthesized with one role member per role.
func (h *Hub) Group(ctx context.Context, ws, name string) (*Group, error) {
	name = strings.TrimPrefix(name, "@")
	if name == Everyone {
		return h.everyone(ctx, ws)
	}
	g, err := h.store.Group(ctx, ws, name)
	if err != nil {
		return nil, groupErr("get group", name, err)
	}
	return g, nil
}

// Expand returns the agent names a group reaches now.
func (h *Hub) Expand(ctx context.Context, g *Group) ([]string, error) {
	as, err := h.store.Agents(ctx, g.Workspace)
	if err != nil {
		return nil, withOp("expand group", err)
	}
	return expandMembers(g.Members, as), nil
}

// Groups lists the groups of ws, @everyone first.
func (h *Hub) Groups(ctx context.Context, ws string) ([]*Group, error) {
	gs, err := h.store.Groups(ctx, ws)
	if err != nil {
		return nil, withOp("list groups", err)
	}
	ev, err := h.everyone(ctx, ws)
	if err != nil {
		return nil, err
	}
	return append([]*Group{ev}, gs...), nil
}

func (h *Hub) everyone(ctx context.Context, ws string) (*Group, error) {
	as, err := h.store.Agents(ctx, ws)
	if err != nil {
		return nil, withOp("get group", err)
	}
	g := &Group{Workspace: ws, Name: Everyone, Description: "every agent in the workspace (built in)", CreatedBy: "parley"}
	for _, a := range as {
		g.Members = append(g.Members, Member{Type: MemberAgent, ID: a.Name})
		if g.CreatedAt.IsZero() || a.CreatedAt.Before(g.CreatedAt) {
			g.CreatedAt = a.CreatedAt
		}
	}
	return g, nil
}

func groupErr(op, name string, err error) error {
	if IsNotFound(err) {
		return Errorf(op, NotFound, "no group named %q: create it with create_group or `parley group create %s`", name, name)
	}
	return withOp(op, err)
}

// withOp names the operation on an error that lacks one, keeping its kind.
func withOp(op string, err error) error {
	if err == nil {
		return nil
	}
	var kind Kind = Internal
	if e, ok := err.(*Error); ok {
		if e.Op != "" {
			return err
		}
		return &Error{Op: op, Kind: e.Kind, Err: e.Err}
	}
	switch {
	case err == context.Canceled:
		kind = Unavailable
	case err == context.DeadlineExceeded:
		kind = Timeout
	default:
		kind = KindOf(err)
	}
	return &Error{Op: op, Kind: kind, Err: err}
}
