package ops

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/workspace"
)

// Sessions: what an MCP session is, whatever transport carries it. A door
// (internal/mcpserver) opens one when its client starts a session
// (OpenSession), hands each tool call the session's Caller, tells it what
// the client does (ToolCalled, Away, Back) and closes it when the session
// ends (Close). The session keeps what that implies, once for every
// transport: the naming rules (Admit, issue 39's) and the agent it speaks
// as, joined on the fly; the reader of what its calls hand out; its agent's
// presence; its hold on its client session's name; its client's doors
// (Claude Code's inbox socket at the start, a Codex thread at the first call
// that names one), which close with it; and a Codex session's rename to its
// thread's name.

// Hello is a session's admission: what its client says of itself
// (api.Hello) and what the door that carries it attests.
type Hello struct {
	api.Hello
	// Token is the id of the agent token the session came with (TCP;
	// api.HeaderAgentToken, which the daemon sets), or "".
	Token string
	// Local: it came over the daemon's Unix socket, from this OS user;
	// only then may its client's doors be registered.
	Local bool
	// Confirm is how the session's client confirms what it is handed.
	Confirm Confirm
}

// Confirm is how a session's client confirms what its calls hand out.
type Confirm int

const (
	// ConfirmAtOnce: no reader; what a call hands out is read as it
	// returns (an in-memory transport's client has it then).
	ConfirmAtOnce Confirm = iota
	// ConfirmByReceipt: the client says which messages it has (the
	// bridge, on a stream session).
	ConfirmByReceipt
	// ConfirmByNextRequest: the client's next request confirms what the
	// answers before it carried (a plain HTTP client); a copy it never
	// confirms comes back, marked redelivered, when its session ends or
	// the lease runs out.
	ConfirmByNextRequest
)

// Session is one MCP session's admission and what follows from it.
type Session struct {
	o     *Ops
	id    string // owns the doors the session registers
	hello Hello
	proc  string // the name a session named after its client's process started with

	// naming holds the session's other calls while its first one that
	// names a Codex thread gives it the thread's name.
	naming sync.Mutex

	mu     sync.Mutex
	caller Caller
	asked  string // the name it was given and gave up for its own (Admit)
	unhold func() // ends its hold on its agent's name for its client session
	thread string // the Codex thread whose door it registered
	// joined: its agent is registered; a session named after itself with no
	// door registers it at its first tool call. Guarded by naming.
	joined  bool
	counted bool // it counts toward its agent's presence
	closed  bool
	// notices wait for the session's next tool result (Notices); push
	// tells its client at once (OnNotice).
	notices []string
	push    func(text string)
}

var sessionSeq atomic.Uint64

// sessions are the open sessions, for TmuxPane.
type sessions struct {
	mu  sync.Mutex
	all map[*Session]struct{}
}

// TmuxPane reports the tmux pane and the nudge choice of one of the
// agent's open sessions that has a pane (an agent normally has one); ok is
// false when none has. The daemon's nudger asks it; nothing of it is
// stored.
func (o *Ops) TmuxPane(ws, agent string) (pane api.TmuxPane, nudge string, ok bool) {
	o.sessions.mu.Lock()
	defer o.sessions.mu.Unlock()
	for s := range o.sessions.all {
		c := s.Caller()
		if c.Workspace == ws && c.Agent == agent && s.hello.Tmux != nil && s.hello.Tmux.Pane != "" {
			return *s.hello.Tmux, s.hello.Nudge, true
		}
	}
	return api.TmuxPane{}, "", false
}

// maxNotices bounds what a session keeps for a next call that may never
// come: the newest stay.
const maxNotices = 16

// Notice tells the open sessions of agent in workspace (every session of
// the workspace when agent is ""), at once, what the daemon must say to
// them unasked (its store is cut off: a claim may be lost, a reservation
// ended): pushed through each session's transport (OnNotice), and carried
// by the result of its next tool call (Notices), which a model reads
// whatever its client does with notifications. It never blocks.
func (o *Ops) Notice(workspace, agent, text string) {
	o.sessions.mu.Lock()
	var told []*Session
	for s := range o.sessions.all {
		if c := s.Caller(); c.Workspace == workspace && (agent == "" || c.Agent == agent) {
			told = append(told, s)
		}
	}
	o.sessions.mu.Unlock()
	for _, s := range told {
		s.mu.Lock()
		s.notices = append(s.notices, text)
		if n := len(s.notices); n > maxNotices {
			s.notices = s.notices[n-maxNotices:]
		}
		push := s.push
		s.mu.Unlock()
		if push != nil {
			go push(text)
		}
	}
}

// OnNotice sets how the session's transport pushes a notice to its client.
func (s *Session) OnNotice(push func(text string)) {
	s.mu.Lock()
	s.push = push
	s.mu.Unlock()
}

// Notices returns, once, the notices the session was not given yet.
func (s *Session) Notices() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.notices
	s.notices = nil
	return n
}

// OpenSession admits a session: it checks what the session says of itself,
// applies the naming rules (Admit), joins the agent when its name is new (a
// known one keeps its role and module unless others were given; an old name
// of an agent that renamed itself is that agent), opens the session's
// reader, counts it toward its agent's presence and registers the door its
// client opened. The session is the door's until it calls Close.
func (o *Ops) OpenSession(ctx context.Context, h Hello) (*Session, error) {
	const op = "mcp"
	c := Caller{Workspace: h.Workspace, Agent: h.Agent, Role: h.Role, Module: h.Module, Token: h.Token, Local: h.Local,
		Door: hub.DoorMCP, Session: h.ClientSession}
	if c.Workspace == "" {
		// A session in a workspace it did not choose would talk to nobody
		// it meant to, silently (the bridge always names one).
		return nil, hub.Errorf(op, hub.Invalid, "no workspace: name one with the %s header or ?workspace= (parley mcp serve takes it from the git repository)", api.HeaderWorkspace)
	}
	if err := hub.ValidWorkspace(c.Workspace); err != nil {
		return nil, err
	}
	if h.NameFrom != "" && c.Agent != "" && c.Token == "" {
		if h.NameFrom != api.NameSession && h.NameFrom != api.NameProcess {
			return nil, hub.Errorf(op, hub.Invalid, "name_from %q: want %s or %s", h.NameFrom, api.NameSession, api.NameProcess)
		}
		c.NameFrom = h.NameFrom
	}
	asked := h.Asked
	if c.Token == "" {
		a := o.Admit(Admission{Workspace: c.Workspace, Agent: c.Agent, NameFrom: c.NameFrom, Session: c.Session,
			Own: h.SessionName, Fixed: h.Fixed, Asked: h.Asked})
		c.NameNote = a.Note
		if a.Agent != c.Agent {
			o.log.Info("an MCP session speaks as its own name", "asked", c.Agent, "agent", a.Agent, "why", a.Note)
			asked = c.Agent
			c.Agent, c.NameFrom = a.Agent, a.NameFrom
		}
	}
	proc := c.Agent // before joining: the name may stand for another agent now
	// A name the session derived for itself registers at its start only
	// when it has a door (a Claude Code session's inbox socket): then it is
	// reachable from its first second. One without (a health check such as
	// `claude mcp list`, a Codex process before its thread is known)
	// registers at its first tool call, and a health check never.
	j := joining{now: c.NameFrom == "" || h.ClaudeInbox != nil || len(h.Doors) > 0, provisional: c.NameFrom != ""}
	joined, err := o.joinCaller(ctx, &c, j)
	if err != nil {
		return nil, err
	}
	s := &Session{o: o, id: "mcp-" + strconv.FormatUint(sessionSeq.Add(1), 36) + "-" + o.hub.NewID(), hello: h, asked: asked, joined: joined}
	if c.NameFrom == api.NameProcess {
		s.proc = proc
	}
	switch h.Confirm {
	case ConfirmByReceipt:
		c.Reader = o.hub.OpenReader(hub.ReaderOptions{Kind: "mcp", Workspace: c.Workspace, Agent: c.Agent, Confirm: hub.ConfirmOnReceipt})
	case ConfirmByNextRequest:
		c.Reader = o.hub.OpenReader(hub.ReaderOptions{Kind: "mcp", Workspace: c.Workspace, Agent: c.Agent, Confirm: hub.ConfirmOnNextRequest})
	}
	c.DoorOwner = s.id
	s.caller, s.counted = c, true
	o.sessions.mu.Lock()
	if o.sessions.all == nil {
		o.sessions.all = map[*Session]struct{}{}
	}
	o.sessions.all[s] = struct{}{}
	o.sessions.mu.Unlock()
	o.hub.SessionOpened(c.Workspace, c.Agent)
	s.hold()
	if in := h.ClaudeInbox; in != nil && in.Address != "" {
		d := *in
		d.Kind = string(hub.DoorClaude)
		go s.openDoor(d)
	}
	for _, d := range h.Doors {
		if d.Kind == string(hub.DoorQwen) || d.Kind == string(hub.DoorOpencode) {
			go s.openDoor(d)
		}
	}
	return s, nil
}

// joining says whether joinCaller registers a new agent now, and whether as
// one its session's start registered (hub.JoinRequest.Provisional).
type joining struct{ now, provisional bool }

// joinCaller joins c's agent on the fly, unless j says not now: a new name
// joins (with its role, or the default one); a known one keeps its role and
// module unless others were given. A name its session derived lives as long
// as the session (hub.JoinRequest.SessionBound). A name that is an agent's
// old one (it renamed itself, and the session comes back, or started in the
// same client session again) is that agent. c gets the agent's name, role
// and module; joined says whether the agent is registered.
func (o *Ops) joinCaller(ctx context.Context, c *Caller, j joining) (joined bool, err error) {
	if c.Agent == "" {
		return false, nil
	}
	if c.Token == "" {
		name, err := o.hub.Canonical(ctx, c.Workspace, c.Agent)
		if err != nil {
			return false, err
		}
		if name != c.Agent {
			// It chose its name: it keeps the role it chose.
			c.Agent, c.Role, c.Module = name, "", ""
		}
	}
	a, err := o.hub.Agent(ctx, c.Workspace, c.Agent)
	switch {
	case err == nil && (c.Role == "" || c.Role == a.Role) && (c.Module == "" || c.Module == a.Module):
	case hub.IsNotFound(err) && !j.now:
		return false, nil
	case err == nil || hub.IsNotFound(err):
		a, err = o.hub.Join(ctx, hub.JoinRequest{Workspace: c.Workspace, Name: c.Agent, Role: c.Role, Module: c.Module,
			SessionBound: c.NameFrom != "", Provisional: j.provisional})
		if err != nil {
			return false, err
		}
	default:
		return false, err
	}
	c.Role, c.Module = a.Role, a.Module
	return true, nil
}

// ID names the session (the owner of its doors).
func (s *Session) ID() string { return s.id }

// Hello is what the session said of itself.
func (s *Session) Hello() Hello { return s.hello }

// SetProfiles records the MCP profiles the door serves the session.
func (s *Session) SetProfiles(profiles []string) {
	s.mu.Lock()
	s.caller.Profiles = profiles
	s.mu.Unlock()
}

// Caller is a copy of the caller the session's calls run for, able to
// rename the session (SetIdentity).
func (s *Session) Caller() Caller {
	s.mu.Lock()
	c := s.caller
	s.mu.Unlock()
	c.Rebind = func(ctx context.Context, agent, role, module string) { s.rebind(ctx, agent, role, module) }
	return c
}

// Reader is the ledger of what the session's calls hand out (nil for
// ConfirmAtOnce): the door tells it what the client did.
func (s *Session) Reader() *hub.Reader {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caller.Reader
}

// ToolCalled notes a tool call of the session: a Codex client names its
// thread (in the call's _meta.threadId), which names a session named after
// its process, and opens the thread's door. (A tool call says nothing of a
// letter: the session's hooks and the client's receipts do.)
func (s *Session) ToolCalled(ctx context.Context, thread string) {
	if thread != "" {
		s.threadName(ctx, thread)
	}
	s.called(ctx)
	s.mu.Lock()
	c := s.caller
	fresh := thread != "" && s.thread != thread && s.hello.CodexHome != "" && c.Local
	if fresh {
		s.thread = thread
	}
	s.mu.Unlock()
	if c.Agent != "" && fresh {
		go s.openDoor(api.DoorRequest{Kind: string(hub.DoorCodex), Session: thread, Address: s.hello.CodexHome})
	}
}

// Push hands the session the agent's next message as a channel would (the
// stream's pushes, api.MethodMessage), waiting without bound; call names
// the push within the session's reader. Nil when none came.
func (s *Session) Push(ctx context.Context, call string) (*api.MessageInfo, error) {
	c := s.Caller()
	c.Via, c.Call = hub.WakeChannel, call
	return s.o.Receive(ctx, &c, Forever)
}

// Away says the session no longer counts toward its agent's presence (a
// session over HTTP without a connection for a while), until Back.
func (s *Session) Away() { s.count(false) }

// Back says the session counts toward its agent's presence again.
func (s *Session) Back() { s.count(true) }

func (s *Session) count(on bool) {
	s.mu.Lock()
	change := s.counted != on && !s.closed
	if change {
		s.counted = on
	}
	ws, agent := s.caller.Workspace, s.caller.Agent
	s.mu.Unlock()
	switch {
	case change && on:
		s.o.hub.SessionOpened(ws, agent)
	case change:
		s.o.hub.SessionClosed(ws, agent)
	}
}

// Close ends the session: its presence, its hold on its name, what it
// holds unconfirmed (back to the inbox, marked redelivered) and its doors.
func (s *Session) Close(ctx context.Context) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	counted := s.counted
	s.closed, s.counted = true, false
	c := s.caller
	unhold := s.unhold
	s.unhold = nil
	s.mu.Unlock()
	s.o.sessions.mu.Lock()
	delete(s.o.sessions.all, s)
	s.o.sessions.mu.Unlock()
	if unhold != nil {
		unhold()
	}
	if counted {
		s.o.hub.SessionClosed(c.Workspace, c.Agent)
	}
	c.Reader.Close(ctx)
	s.o.hub.CloseDoorsOf(ctx, c.Workspace, c.Agent, s.id)
}

// openDoor registers the door of the session's client, owned by the
// session.
func (s *Session) openDoor(in api.DoorRequest) {
	c := s.Caller()
	if !c.Local || c.Agent == "" {
		return
	}
	if _, err := s.o.OpenDoor(context.Background(), &c, in); err != nil {
		s.o.log.Warn("register the client's door", "agent", c.Agent, "kind", in.Kind, "err", err)
	}
}

// rebind moves the session to the agent it renamed itself to: its later
// calls speak as it, its presence counts for it, and its reader, whose
// copies the rename moved, knows their inbox.
func (s *Session) rebind(ctx context.Context, agent, role, module string) {
	s.mu.Lock()
	ws, old := s.caller.Workspace, s.caller.Agent
	s.caller.Agent, s.caller.Role, s.caller.Module = agent, role, module
	counted := s.counted
	s.mu.Unlock()
	if old == agent {
		return
	}
	s.hold()
	s.caller.Reader.Renamed(ws, old, agent)
	if counted {
		s.o.hub.SessionOpened(ws, agent)
		s.o.hub.SessionClosed(ws, old)
	}
	s.o.log.Info("an MCP session renamed its agent", "session", s.id, "from", old, "to", agent)
}

// hold records that the session's client session holds its agent's name
// (the rule that two live client sessions never share one: Admit), in
// place of what it held before, until the session ends.
func (s *Session) hold() {
	c := s.Caller()
	release := s.o.hub.Hold(c.Workspace, c.Agent, c.Session, s.asked)
	s.mu.Lock()
	old := s.unhold
	s.unhold = release
	if s.closed { // it ended meanwhile
		s.unhold = nil
		defer release()
	}
	s.mu.Unlock()
	if old != nil {
		old()
	}
}

// threadName gives a session named after its client's process the name of
// the Codex thread its tool call names (_meta.threadId): Codex starts its
// MCP servers with no word of the thread, but its hooks get it in their
// input and its shell commands in CODEX_THREAD_ID, and derive the thread's
// name from it (workspace.FindSession); from this call on, the session
// speaks as that name too. The process's name becomes an alias of it
// (hub.Rename). A thread's name that is an agent already (the thread
// resumed in another Codex, or its hooks spoke first) is taken as it is,
// and so is the name it chose for itself (set_identity). The session may
// still choose its own.
func (s *Session) threadName(ctx context.Context, thread string) {
	s.naming.Lock()
	defer s.naming.Unlock()
	c := s.Caller()
	if c.NameFrom != api.NameProcess || c.Agent == "" || c.Token != "" || s.proc == "" || s.hello.Root == "" {
		return
	}
	ts, _ := workspace.FindSession(workspace.CodexThreadEnv(thread))
	name := ts.Name(s.hello.Root)
	// From now on its client session is the thread, as its hooks' is.
	s.mu.Lock()
	s.caller.Session = ts.Key()
	s.mu.Unlock()
	s.hold()
	to, err := s.threadAgent(ctx, c, name)
	if err != nil {
		s.o.log.Warn("name a Codex session after its thread", "agent", c.Agent, "thread", thread, "err", err)
		return
	}
	s.joined = true
	s.rebind(ctx, to.Agent, to.Role, to.Module)
	s.mu.Lock()
	s.caller.NameFrom = api.NameSession
	s.mu.Unlock()
}

// threadAgent is the agent of the thread's name: the one that has it, or
// has it as an old name (its hooks registered it at the thread's start, or
// the thread resumed in another Codex), with that agent's role; else, when
// the session registered the process's name already (a call that named no
// thread), that agent renamed to it; else a new agent of that name, with
// the role the session was given (another thread of the same Codex may
// have taken the process's name for its own).
func (s *Session) threadAgent(ctx context.Context, c Caller, name string) (Caller, error) {
	h := s.o.hub
	canon, err := h.Canonical(ctx, c.Workspace, name)
	if err != nil {
		return c, err
	}
	switch _, err := h.Agent(ctx, c.Workspace, canon); {
	case err == nil:
		// It keeps its role: the process's was not chosen for it.
		c.Agent, c.Role, c.Module = canon, "", ""
	case !hub.IsNotFound(err):
		return c, err
	case s.joined && c.Agent == s.proc:
		if owner, err := h.Canonical(ctx, c.Workspace, s.proc); err != nil {
			return c, err
		} else if owner == s.proc {
			a, err := h.Rename(ctx, hub.RenameRequest{Workspace: c.Workspace, Old: s.proc, New: name, Module: c.Module})
			if err != nil {
				return c, err
			}
			c.Agent, c.Role, c.Module = a.Name, a.Role, a.Module
			return c, nil
		}
		c.Agent = canon
	default:
		c.Agent = canon
	}
	_, err = s.o.joinCaller(ctx, &c, joining{now: true})
	return c, err
}

// called notes a tool call of the session's agent: a session that had not
// registered its agent (named after itself, with no door) registers it now,
// and an agent its session's start registered has made its first call
// (hub.Called).
func (s *Session) called(ctx context.Context) {
	s.naming.Lock()
	defer s.naming.Unlock()
	c := s.Caller()
	if c.Agent == "" {
		return
	}
	if s.joined {
		s.o.hub.Called(ctx, c.Workspace, c.Agent)
		return
	}
	if _, err := s.o.joinCaller(ctx, &c, joining{now: true}); err != nil {
		s.o.log.Warn("register a session's agent at its first call", "agent", c.Agent, "err", err)
		return
	}
	s.joined = true
	s.rebind(ctx, c.Agent, c.Role, c.Module)
}
