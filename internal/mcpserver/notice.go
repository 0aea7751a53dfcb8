package mcpserver

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaNotices is the _meta key of a tool result that carries the daemon's
// notices to its session (Notice), a list of strings.
const MetaNotices = "parley/notices"

// Notice tells the open sessions of agent in workspace (every session of
// the workspace when agent is ""), at once, what the daemon must say to
// them unasked (its store is cut off: a claim may be lost, a reservation
// ended): pushed as a warning notifications/message to a client that set a
// log level, and carried by the result of each session's next tool call,
// which a model reads whatever its client does with notifications. It
// never blocks.
func (s *Server) Notice(workspace, agent, text string) {
	s.mu.Lock()
	var push []*mcp.ServerSession
	for ss, sess := range s.sessions {
		c := sess.Caller()
		if c.Workspace != workspace || (agent != "" && c.Agent != agent) {
			continue
		}
		sess.notices = append(sess.notices, text)
		push = append(push, ss)
	}
	s.mu.Unlock()
	for _, ss := range push {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := ss.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Logger: "parley", Data: text}); err != nil {
				s.log.Debug("push a notice", "err", err)
			}
		}()
	}
}

// withNotices adds to res the notices sess has not been given yet.
func (s *Server) withNotices(sess *session, res mcp.Result) {
	tr, ok := res.(*mcp.CallToolResult)
	if !ok || tr == nil {
		return
	}
	s.mu.Lock()
	notes := sess.notices
	sess.notices = nil
	s.mu.Unlock()
	if len(notes) == 0 {
		return
	}
	for _, n := range notes {
		tr.Content = append(tr.Content, &mcp.TextContent{Text: "Notice from the Parley daemon: " + n})
	}
	if tr.Meta == nil {
		tr.Meta = mcp.Meta{}
	}
	tr.Meta[MetaNotices] = notes
}
