package mcpserver

import (
	"time"
)

// Liveness of sessions over HTTP. The SDK ends a session on DELETE or after
// sessionTimeout without a request (30 minutes: a quiet client keeps its
// session). But a client that keeps a GET stream open (the go-sdk's and the
// TypeScript SDK's do) shows its death: the stream closes with it. So a
// session whose last request ended with the client gone, and one whose
// client never finished initializing, ends after Linger without a new
// request; a client that only reconnected its stream is back within it. A
// client with no GET stream shows nothing when it vanishes: its session,
// once it had no connection for Idle, stops counting toward its agent's
// presence until its next request, and lives on.
const (
	// DefaultLinger is how long a session may go without a connection once
	// its client hung up, or without finishing initialization.
	DefaultLinger = 15 * time.Second
	// DefaultIdle is how long a session over HTTP may go without a
	// connection before it stops counting toward its agent's presence.
	DefaultIdle = 45 * time.Second
)

// requestStarted counts a request of the session sid, if it is one of ours
// and was opened with the same agent token (or none), and returns the
// session to pass to requestEnded.
func (s *Server) requestStarted(sid, token string) *session {
	s.mu.Lock()
	sess := s.byID[sid]
	if sess == nil || sess.Caller().Token != token {
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
	s.mu.Unlock()
	if back {
		sess.Back()
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
	s.mu.Unlock()
	if away {
		s.log.Debug("an MCP session without a connection no longer counts toward presence", "session", sess.ss.ID(), "agent", sess.Caller().Agent)
		sess.Away()
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
	s.mu.Unlock()
	if !end {
		return
	}
	why := "client gone"
	if !sess.ready {
		why = "never initialized"
	}
	s.log.Info("ending an abandoned MCP session", "session", sess.ss.ID(), "agent", sess.Caller().Agent, "why", why)
	sess.ss.Close()
}
