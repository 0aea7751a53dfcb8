package mcpserver

import (
	"time"
)

// Liveness of sessions over HTTP. The SDK ends a session on DELETE or after
// sessionTimeout without a request (30 minutes, so that a quiet client keeps
// its session). A client killed without a DELETE would hold its session, and
// keep its agent present, that long. But a client that keeps a GET stream
// open (the bridge, and the go-sdk and TypeScript clients, do) shows its
// death: the stream's connection closes with it. So a session whose last
// request ended with the client gone, and one whose client never finished
// initializing, ends after Linger without a new request. A client that only
// reconnected its stream is back well within Linger.

// DefaultLinger is how long a session may go without a connection once its
// client hung up, or without finishing initialization.
const DefaultLinger = 15 * time.Second

// A plain Streamable HTTP client keeps no connection between its requests
// (no GET stream), so nothing shows when it vanishes without a DELETE: its
// session would keep its agent present for sessionTimeout. Such a session,
// once it has had no connection for Idle, stops counting toward its agent's
// presence (the agent shows offline, unless another session or a recent
// request of its own keeps it present), and counts again from its next
// request. The session itself lives on: a quiet client keeps it.

// DefaultIdle is how long a session over HTTP may go without a connection
// before it stops counting toward its agent's presence: an abandoned one
// shows offline within a minute.
const DefaultIdle = 45 * time.Second

// requestStarted counts a request of the session sid, if it is one of ours
// and was opened with the same agent token (or none), and returns the
// session to pass to requestEnded.
func (s *Server) requestStarted(sid, token string) *session {
	s.mu.Lock()
	sess := s.byID[sid]
	if sess == nil || sess.caller.Token != token {
		s.mu.Unlock()
		return nil
	}
	sess.conns++
	sess.lost = false
	if sess.reap != nil {
		sess.reap.Stop()
	}
	if sess.idle != nil {
		sess.idle.Stop()
	}
	back := sess.away
	sess.away = false
	ws, agent := sess.caller.Workspace, sess.caller.Agent // set_identity changes it under s.mu
	s.mu.Unlock()
	if back {
		s.hub.SessionOpened(ws, agent)
	}
	return sess
}

// requestEnded undoes requestStarted; gone says the client hung up.
func (s *Server) requestEnded(sess *session, gone bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess.conns--
	if gone {
		sess.lost = true
	}
	if sess.reap != nil && sess.dying() {
		sess.reap.Reset(s.opts.Linger)
	}
	if sess.idle != nil && sess.conns == 0 {
		sess.idle.Reset(s.opts.Idle)
	}
}

// idleSession stops counting sess toward its agent's presence if it still
// has no connection once its Idle is up.
func (s *Server) idleSession(sess *session) {
	s.mu.Lock()
	away := sess.conns == 0 && !sess.away && sess.reap != nil
	if away {
		sess.away = true
	}
	ws, agent := sess.caller.Workspace, sess.caller.Agent
	s.mu.Unlock()
	if away {
		s.log.Debug("an MCP session without a connection no longer counts toward presence", "session", sess.id, "agent", agent)
		s.hub.SessionClosed(ws, agent)
	}
}

// dying reports whether nothing keeps the session: no connection, and a
// client that hung up or never finished initializing. Server.mu is held.
func (sess *session) dying() bool {
	return sess.conns == 0 && (sess.lost || !sess.ready)
}

// reapSession ends sess if it is still dying once its Linger is up.
func (s *Server) reapSession(sess *session) {
	s.mu.Lock()
	end := sess.reap != nil && sess.dying()
	agent := sess.caller.Agent
	s.mu.Unlock()
	if !end {
		return
	}
	why := "client gone"
	if !sess.ready {
		why = "never initialized"
	}
	s.log.Info("ending an abandoned MCP session", "session", sess.id, "agent", agent, "why", why)
	sess.ss.Close()
}
