package ops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// MessageStatus shows where each copy of a message stands: its sender sees
// every recipient's, a recipient its own.
func (o *Ops) MessageStatus(ctx context.Context, c *Caller, in api.MessageStatusRequest) (api.MessageStatusResult, error) {
	if in.MessageID == "" {
		return api.MessageStatusResult{}, hub.Errorf("message_status", hub.Invalid, "message_id must not be empty")
	}
	if ReadViewer(c) != "" {
		if _, err := o.message(ctx, c, "message_status", in.MessageID); err != nil {
			return api.MessageStatusResult{}, err
		}
	}
	st, err := o.hub.MessageStatus(ctx, c.Workspace, c.Agent, in.MessageID)
	if err != nil {
		return api.MessageStatusResult{}, err
	}
	m := st.Message
	out := api.MessageStatusResult{MessageID: m.ID, From: m.From, To: m.To, Timestamp: api.FormatTime(m.CreatedAt),
		AckRequired: m.AckRequired, AckDeadline: api.FormatTime(m.AckDeadline),
		ExpiresAt: api.FormatTime(m.ExpiresAt), Deliver: string(m.Mode()),
		Recipients: make([]api.RecipientDelivery, len(st.Deliveries))}
	for i, d := range st.Deliveries {
		out.Recipients[i] = api.RecipientDelivery{Recipient: d.Recipient, State: AttentionState(d), DeliveryCount: d.Count,
			DeliveredAt: api.FormatTime(d.DeliveredAt), Session: readerDigest(d.Reader), LeaseUntil: api.FormatTime(d.LeaseUntil),
			ReadAt: api.FormatTime(d.ReadAt), AckedAt: api.FormatTime(d.AckedAt),
			WakePath: string(d.WokeVia), WokenAt: api.FormatTime(d.WokeAt), SeenAt: api.FormatTime(d.SeenAt),
			BouncedAt: api.FormatTime(d.BouncedAt), BounceReason: d.BounceReason}
		if d.Door != "" && d.Door != hub.DoorDeclined {
			r := &out.Recipients[i]
			r.Door, r.Note, r.Since, r.Until = string(d.Door), d.DoorNote, api.FormatTime(d.DoorAt), api.FormatTime(d.DoorUntil)
		}
	}
	return out, nil
}

// AttentionState is where a copy stands, as a sender follows it: queued ->
// handed (a letter through the recipient's door told it) -> held (the
// client holds the letter for a person) or unconfirmed (the session went
// idle and said nothing of it) -> seen (the session's turn carried it) ->
// delivered -> read -> acked; or redelivered, declined (a person refused
// the letter) or bounced. Each comes from what the client said, never from
// a guess.
func AttentionState(d *hub.Delivery) string {
	switch {
	case d.State != hub.Queued && d.State != hub.Redelivered:
		return string(d.State)
	case !d.SeenAt.IsZero():
		return "seen"
	case d.Door == hub.DoorHeld:
		return "held"
	case d.Door == hub.DoorUnconfirmed && d.WokeVia.IsDoor():
		return "unconfirmed"
	case d.WokeVia.IsDoor():
		return "handed"
	}
	return string(d.State)
}

// NoteWake records that a path which tells the caller of its mail without
// handing it over (a client hook) reached it with these messages.
func (o *Ops) NoteWake(ctx context.Context, c *Caller, in api.NoteWakeRequest) (api.NoteWakeResult, error) {
	const op = "note_wake"
	if err := c.needAgent(op); err != nil {
		return api.NoteWakeResult{}, err
	}
	n, err := o.hub.NoteWake(ctx, c.Workspace, c.Agent, in.MessageIDs, hub.WakePath(in.Via))
	if err != nil {
		return api.NoteWakeResult{}, err
	}
	return api.NoteWakeResult{Marked: n}, nil
}

// readerDigest names a reader without giving its key away: an MCP session id
// is all it takes to act as that session.
func readerDigest(reader string) string {
	if reader == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(reader))
	return hex.EncodeToString(sum[:6])
}

// Ack acknowledges messages sent to the caller.
func (o *Ops) Ack(ctx context.Context, c *Caller, in api.AckRequest) (api.AckResult, error) {
	const op = "ack_message"
	if err := c.needAgent(op); err != nil {
		return api.AckResult{}, err
	}
	if len(in.MessageIDs) == 0 {
		return api.AckResult{}, hub.Errorf(op, hub.Invalid, "message_ids must name at least one message")
	}
	if len(in.MessageIDs) > hub.MaxCheckLimit {
		return api.AckResult{}, hub.Errorf(op, hub.Invalid, "message_ids has %d ids; at most %d at once", len(in.MessageIDs), hub.MaxCheckLimit)
	}
	n, err := o.hub.Ack(ctx, c.Workspace, c.Agent, in.MessageIDs)
	if err != nil {
		return api.AckResult{}, err
	}
	return api.AckResult{Status: "acked", Acked: n}, nil
}

// WaitForReply blocks until a reply to in.MessageID addressed to the caller
// arrives (or the timeout passes) and hands it over: a request and its
// response between agents in one call.
func (o *Ops) WaitForReply(ctx context.Context, c *Caller, in api.ReplyWaitRequest) (api.WaitResult, error) {
	const op = "wait_for_reply"
	timeout, err := secondsArg(op, in.Timeout, hub.DefaultWaitTimeout, hub.MaxWaitTimeout)
	if err != nil {
		return api.WaitResult{}, err
	}
	if err := c.needAgent(op); err != nil {
		return api.WaitResult{}, err
	}
	if in.MessageID == "" {
		return api.WaitResult{}, hub.Errorf(op, hub.Invalid, "message_id must not be empty")
	}
	if ReadViewer(c) != "" {
		if _, err := o.message(ctx, c, op, in.MessageID); err != nil {
			return api.WaitResult{}, err
		}
	}
	start := time.Now()
	d, err := o.receive(ctx, c, timeout, hub.PriorityFilter{}, in.MessageID)
	if err != nil {
		return api.WaitResult{}, err
	}
	return waitResult(d, start), nil
}

// Overdue lists the caller's messages (or, with in.All, everyone's) whose
// ack deadline passed with recipients that have not acknowledged them.
func (o *Ops) Overdue(ctx context.Context, c *Caller, in api.OverdueRequest) (api.OverdueResult, error) {
	sender := c.Agent
	if in.All {
		if c.Token != "" {
			return api.OverdueResult{}, hub.Errorf("list_overdue", hub.Forbidden, "all is not open to an agent token: it lists other agents' messages; use the admin token")
		}
		sender = ""
	} else if err := c.needAgent("list_overdue"); err != nil {
		return api.OverdueResult{}, err
	}
	od, err := o.hub.Overdue(ctx, c.Workspace, sender)
	if err != nil {
		return api.OverdueResult{}, err
	}
	out := api.OverdueResult{Overdue: make([]api.OverdueInfo, len(od))}
	for i, x := range od {
		m := x.Message
		out.Overdue[i] = api.OverdueInfo{MessageID: m.ID, From: m.From, To: m.To, Preview: api.Preview(m.Content),
			AckDeadline: api.FormatTime(m.AckDeadline), Pending: x.Pending}
	}
	return out, nil
}
