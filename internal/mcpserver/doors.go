package mcpserver

import (
	"context"
	"net"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// Doors of the sessions' clients. A session whose client opened a door
// (Claude Code's inbox socket; the Codex thread that calls its tools)
// registers it for its agent: the Claude door when the session starts,
// from its headers, and a Codex door at the first tool call that names its
// thread (in _meta.threadId), or a new thread. The doors close when the
// session ends. Only sessions over the daemon's Unix socket register one:
// the daemon writes into a door as its own OS user, so the door must be
// this user's.

// isLocal reports whether r came over the daemon's Unix socket.
func isLocal(r *http.Request) bool {
	a, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return a != nil && a.Network() == "unix"
}

// openDoor registers the door of sess's client, owned by the session.
func (s *Server) openDoor(sess *session, in api.DoorRequest) {
	s.mu.Lock()
	c := sess.caller // set_identity changes it under s.mu
	s.mu.Unlock()
	if !sess.local || c.Agent == "" {
		return
	}
	c.Local, c.DoorOwner = true, sess.id
	if _, err := s.ops.OpenDoor(context.Background(), &c, in); err != nil {
		s.log.Warn("register the client's door", "agent", c.Agent, "kind", in.Kind, "err", err)
	}
}

// toolCalled notes a tool call of sess: a Codex client names its thread.
// (A tool call says nothing of a letter: the session's hooks and the
// client's receipts do.)
func (s *Server) toolCalled(ctx context.Context, sess *session, req mcp.Request) {
	var thread string
	if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok {
		thread, _ = p.Meta["threadId"].(string)
	}
	if thread != "" {
		s.threadName(ctx, sess, thread)
	}
	s.called(ctx, sess)
	s.mu.Lock()
	agent := sess.caller.Agent
	s.mu.Unlock()
	if agent == "" {
		return
	}
	if sess.codex == "" || !sess.local || thread == "" {
		return
	}
	s.mu.Lock()
	fresh := sess.thread != thread
	sess.thread = thread
	s.mu.Unlock()
	if fresh {
		go s.openDoor(sess, api.DoorRequest{Kind: string(hub.DoorCodex), Session: thread, Address: sess.codex})
	}
}
