package mcpserver

import (
	"context"
)

// IdentityProfile is the profile of set_identity. A session whose agent name
// Parley derived for it (api.HeaderAgentFrom: a client package such as the
// Claude Code plugin bakes in no name) gets it beside native or lean, and
// no other session does: a name that was given cannot change, and the
// tool would only take room in the model's context.
const IdentityProfile = "identity"

func (s *Server) identity() Profile {
	return Profile{Tools: []Tool{
		typed(s, "set_identity", "Replace the name Parley derived for this session (claude-myrepo-3f9a1c) with one you choose, and set your role. Mail to the old name follows you.", s.ops.Op("SetIdentity")),
	}}
}

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
	sess.caller.Reader.Renamed(ws, old, agent)
	if counted {
		s.hub.SessionOpened(ws, agent)
		s.hub.SessionClosed(ws, old)
	}
	s.log.Info("an MCP session renamed its agent", "session", sess.id, "from", old, "to", agent)
}
