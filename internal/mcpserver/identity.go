package mcpserver

import (
	"context"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/ops"
	"github.com/parley-dev/parley/internal/workspace"
)

// rebind moves sess to the agent it renamed itself to: its later calls
// speak as it, its presence counts for it, and its reader, whose copies the
// rename moved, knows their inbox.
func (s *Server) rebind(ctx context.Context, sess *session, agent, role, module string) {
	s.mu.Lock()
	ws, old := sess.caller.Workspace, sess.caller.Agent
	sess.caller.Agent, sess.caller.Role, sess.caller.Module = agent, role, module
	counted := sess.ss != nil && !sess.away
	s.mu.Unlock()
	if old == agent {
		return
	}
	s.hold(sess)
	sess.caller.Reader.Renamed(ws, old, agent)
	if counted {
		s.hub.SessionOpened(ws, agent)
		s.hub.SessionClosed(ws, old)
	}
	s.log.Info("an MCP session renamed its agent", "session", sess.id, "from", old, "to", agent)
}

// hold records that sess's client session holds its agent's name (the
// rule that two live client sessions never share one: ops.Admit), in place
// of what it held before, until the session ends.
func (s *Server) hold(sess *session) {
	s.mu.Lock()
	c := sess.caller
	s.mu.Unlock()
	release := s.hub.Hold(c.Workspace, c.Agent, c.Session, sess.asked)
	s.mu.Lock()
	old := sess.unhold
	sess.unhold = release
	if sess.over { // it ended meanwhile
		sess.unhold = nil
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
// name from it (workspace.SessionName); from this call on, the session
// speaks as that name too, and registers it (a session named after its
// process registers nothing before its first call, which names the thread;
// a process's name registered by a call that named none becomes the
// thread's, and stays its alias).
// A thread's name that is an agent already (the thread's SessionStart hook
// registered it, or the thread resumed in another Codex) is taken as it
// is, and so is the name it chose for itself (set_identity). The session
// may still choose its own.
func (s *Server) threadName(ctx context.Context, sess *session, thread string) {
	sess.naming.Lock()
	defer sess.naming.Unlock()
	s.mu.Lock()
	c := sess.caller
	s.mu.Unlock()
	if c.NameFrom != api.NameProcess || c.Agent == "" || c.Token != "" || sess.proc == "" || sess.root == "" {
		return
	}
	ts, _ := workspace.FindSession(workspace.CodexThreadEnv(thread))
	name := ts.Name(sess.root)
	// From now on its client session is the thread, as its hooks' is.
	s.mu.Lock()
	sess.caller.Session = ts.Key()
	s.mu.Unlock()
	s.hold(sess)
	to, err := s.threadAgent(ctx, c, sess.proc, name, sess.joined)
	if err != nil {
		s.log.Warn("name a Codex session after its thread", "agent", c.Agent, "thread", thread, "err", err)
		return
	}
	sess.joined = true
	s.rebind(ctx, sess, to.Agent, to.Role, to.Module)
	s.mu.Lock()
	sess.caller.NameFrom = api.NameSession
	s.mu.Unlock()
}

// threadAgent is the agent of the thread's name: the one that has it, or
// has it as an old name (its hooks registered it at the thread's start, or
// the thread resumed in another Codex), with that agent's role; else, when
// the session registered the process's name already (a call that named no
// thread), that agent renamed to it; else a new agent of that name, with
// the role the session was given (another thread of the same Codex may
// have taken the process's name for its own).
func (s *Server) threadAgent(ctx context.Context, c ops.Caller, proc, name string, joined bool) (ops.Caller, error) {
	canon, err := s.hub.Canonical(ctx, c.Workspace, name)
	if err != nil {
		return c, err
	}
	switch _, err := s.hub.Agent(ctx, c.Workspace, canon); {
	case err == nil:
		// It keeps its role: the process's was not chosen for it.
		c.Agent, c.Role, c.Module = canon, "", ""
	case !hub.IsNotFound(err):
		return c, err
	case joined && c.Agent == proc:
		if owner, err := s.hub.Canonical(ctx, c.Workspace, proc); err != nil {
			return c, err
		} else if owner == proc {
			a, err := s.hub.Rename(ctx, hub.RenameRequest{Workspace: c.Workspace, Old: proc, New: name, Module: c.Module})
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
	_, err = s.admit(ctx, &c, joining{now: true})
	return c, err
}

// called notes a tool call of sess's agent: a session that had not
// registered its agent (named after itself, with no door) registers it now,
// and an agent its session's start registered has made its first call
// (hub.Called).
func (s *Server) called(ctx context.Context, sess *session) {
	sess.naming.Lock()
	defer sess.naming.Unlock()
	s.mu.Lock()
	c := sess.caller
	s.mu.Unlock()
	if c.Agent == "" {
		return
	}
	if sess.joined {
		s.hub.Called(ctx, c.Workspace, c.Agent)
		return
	}
	if _, err := s.admit(ctx, &c, joining{now: true}); err != nil {
		s.log.Warn("register a session's agent at its first call", "agent", c.Agent, "err", err)
		return
	}
	sess.joined = true
	s.rebind(ctx, sess, c.Agent, c.Role, c.Module)
}
