package ops

import (
	"context"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// Reply answers a message: to its sender (or, for the caller's own message,
// to its recipients), in its thread. The lean profile's one tool for what
// send_message's reply_to and to do together.
func (o *Ops) Reply(ctx context.Context, c *Caller, in api.ReplyRequest) (api.SendResult, error) {
	const op = "reply"
	if err := c.needAgent(op); err != nil {
		return api.SendResult{}, err
	}
	if in.MessageID == "" {
		return api.SendResult{}, hub.Errorf(op, hub.Invalid, "message_id must not be empty")
	}
	m, err := o.message(ctx, c, op, in.MessageID)
	if err != nil {
		return api.SendResult{}, err
	}
	to := m.From
	if m.From == c.Agent {
		to = m.To
	}
	return o.Send(ctx, c, api.SendRequest{To: to, Content: in.Content, ReplyTo: m.ID, Priority: in.Priority})
}
