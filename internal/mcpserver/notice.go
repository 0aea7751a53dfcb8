package mcpserver

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaNotices is the _meta key of a tool result that carries the daemon's
// notices to its session (ops.Notice), a list of strings.
const MetaNotices = "parley/notices"

// pushNotices has ss's session push each notice as a warning
// notifications/message (to a client that set a log level).
func (s *Server) pushNotices(ss *mcp.ServerSession, sess *session) {
	sess.OnNotice(func(text string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := ss.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Logger: "parley", Data: text}); err != nil {
			s.log.Debug("push a notice", "err", err)
		}
	})
}

// withNotices adds to a tool result the notices sess was not given yet.
func withNotices(sess *session, res mcp.Result) {
	tr, ok := res.(*mcp.CallToolResult)
	if !ok || tr == nil {
		return
	}
	notes := sess.Notices()
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
