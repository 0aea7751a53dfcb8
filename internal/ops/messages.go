package ops

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/supervise"
)

// Send stores a message from the caller to in.To and says where it went.
func (o *Ops) Send(ctx context.Context, c *Caller, in api.SendRequest) (api.SendResult, error) {
	if in.ReplyTo != "" && ReadViewer(c) != "" {
		// A reply joins the thread: only one the caller may read.
		if _, err := o.message(ctx, c, "send_message: reply_to", in.ReplyTo); err != nil {
			return api.SendResult{}, err
		}
	}
	if hub.DeliverMode(in.Deliver) == hub.DeliverInterrupt {
		if err := o.mayInterrupt(ctx, c, in.To); err != nil {
			return api.SendResult{}, err
		}
	}
	req := hub.SendRequest{Workspace: c.Workspace, From: c.Agent, To: in.To,
		Content: in.Content, Payload: in.Payload, Priority: in.Priority, ReplyTo: in.ReplyTo, Metadata: in.Metadata,
		AckRequired: in.AckRequired, Door: c.Door, IdempotencyKey: in.IdempotencyKey, Deliver: in.Deliver,
		KeepUnjoined: in.KeepUnjoined}
	ttl, err := messageTTL("send_message", in.TTL)
	if err != nil {
		return api.SendResult{}, err
	}
	req.TTL = ttl
	if in.AckWithin != nil {
		within, err := secondsArg("send_message", in.AckWithin, 0, maxAckWithin)
		if err != nil {
			return api.SendResult{}, err
		}
		req.AckDeadline = time.Now().Add(within)
	}
	res, err := o.hub.Send(ctx, req)
	if err != nil {
		return api.SendResult{}, err
	}
	o.hub.Called(ctx, c.Workspace, c.Agent) // a send is a call
	out := api.SendResult{Status: "delivered", MessageID: res.Message.ID, Recipients: res.Recipients,
		ThreadID: res.Message.ThreadID, RecipientStatus: recipientStatus(res), Replayed: res.Replayed}
	if res.Unjoined {
		out.Status, out.Warning = "queued", o.unjoinedWarning(ctx, c.Workspace, res)
	}
	return out, nil
}

// unjoinedWarning tells the sender of a message to a name nobody has what
// became of it: the names that look like it, and when it comes back.
func (o *Ops) unjoinedWarning(ctx context.Context, ws string, res *hub.SendResult) string {
	name := res.Recipients[0]
	w := fmt.Sprintf("%s has never joined this workspace", name)
	if near, err := o.hub.NearNames(ctx, ws, name); err == nil && len(near) > 0 {
		w += "; did you mean " + orList(near) + "?"
	} else {
		w += "."
	}
	w += fmt.Sprintf(" The message waits in %s's inbox", name)
	if m := res.Message; !m.ExpiresAt.IsZero() {
		w += fmt.Sprintf(" and bounces back to you in %s unless %s joins", shortDuration(m.ExpiresAt.Sub(m.CreatedAt)), name)
	}
	return w + "."
}

// orList is "a", "a or b", "a, b or c".
func orList(ns []string) string {
	if len(ns) == 1 {
		return ns[0]
	}
	return strings.Join(ns[:len(ns)-1], ", ") + " or " + ns[len(ns)-1]
}

// shortDuration writes d as people do: 10m, 1h30m, 2d.
func shortDuration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0 && d > time.Hour:
		return strings.TrimSuffix(d.String(), "0s")
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// mayInterrupt refuses a send with deliver interrupt that would reach a
// managed agent its caller does not manage: an interrupt cancels the
// agent's turn in progress and starts another, which spends its budget,
// so it is management (as cancel_agent is). A person (human:NAME), the
// agent's owner (the agent that created it) and the escalation lead
// ([escalation] lead in config.toml: a name, or @ROLE) may; an agent
// token never may, as it may not manage agents.
func (o *Ops) mayInterrupt(ctx context.Context, c *Caller, to string) error {
	const op = "send_message"
	if o.runner == nil {
		return nil
	}
	names, err := o.hub.Resolve(ctx, c.Workspace, to, c.Agent)
	if err != nil {
		return nil // the send says what is wrong with the address
	}
	for _, name := range names {
		a, err := o.runner.Get(c.Workspace, name)
		if err != nil {
			continue // not managed: a client session's door steers instead
		}
		switch {
		case c.Token != "":
			return hub.Errorf(op, hub.Forbidden, "deliver interrupt would cancel managed agent %s's turn and spend its budget: that is managing it, which an agent token may not; send with deliver steer", name)
		case strings.HasPrefix(c.Agent, hub.HumanPrefix), c.Agent != "" && c.Agent == a.Owner, o.leads(ctx, c):
			continue
		}
		owner := a.Owner
		if owner == "" {
			owner = "the person who created it"
		}
		return hub.Errorf(op, hub.Forbidden, "deliver interrupt would cancel managed agent %s's turn and spend its budget: only its owner (%s) or the escalation lead may; send with deliver steer, or ask them", name, owner)
	}
	return nil
}

// leads reports whether the caller is the escalation lead config.toml
// names: that agent, or an agent with that @ROLE.
func (o *Ops) leads(ctx context.Context, c *Caller) bool {
	if o.ladder == nil || c.Agent == "" {
		return false
	}
	lead := supervise.LeadAddress(o.ladder.Lead())
	if role, ok := strings.CutPrefix(lead, hub.RolePrefix); ok {
		a, err := o.hub.Agent(ctx, c.Workspace, c.Agent)
		return err == nil && a.Role == role
	}
	return lead != "" && lead == c.Agent
}

// recipientStatus is a send's recipient_status: the presence of its one
// recipient, or "mixed" for several.
func recipientStatus(res *hub.SendResult) string {
	if len(res.Presence) != 1 {
		return "mixed"
	}
	return string(res.Presence[0])
}

// messageTTL reads a send's time to live in seconds: absent is the
// daemon's default, 0 none.
func messageTTL(op string, secs *int) (time.Duration, error) {
	switch {
	case secs == nil:
		return 0, nil
	case *secs == 0:
		return hub.NoTTL, nil
	case *secs < 0 || time.Duration(*secs)*time.Second > hub.MaxTTL:
		return 0, hub.Errorf(op, hub.Invalid, "ttl_seconds %d is out of range: want 1 to %d seconds, or 0 for none", *secs, int(hub.MaxTTL/time.Second))
	}
	return time.Duration(*secs) * time.Second, nil
}

// maxAckWithin bounds an ack deadline: a week.
const maxAckWithin = 7 * 24 * time.Hour

// Check hands up to in.Limit of the caller's unread messages to it.
func (o *Ops) Check(ctx context.Context, c *Caller, in api.CheckRequest) (api.CheckResult, error) {
	const op = "check_messages"
	if err := limitArg(op, "limit", in.Limit); err != nil {
		return api.CheckResult{}, err
	}
	if err := c.needAgent(op); err != nil {
		return api.CheckResult{}, err
	}
	o.hub.Called(ctx, c.Workspace, c.Agent) // so is a read
	r, err := o.reader(c)
	if err != nil {
		return api.CheckResult{}, err
	}
	ds, remaining, err := o.hub.Receive(ctx, hub.ReceiveRequest{Workspace: c.Workspace, Agent: c.Agent,
		Reader: r, Call: c.Call, Limit: in.Limit, Via: c.Via})
	if err != nil {
		return api.CheckResult{}, err
	}
	return checkResult(ds, remaining), nil
}

// Peek lists up to in.Limit of the caller's unread messages, leaving them unread.
func (o *Ops) Peek(ctx context.Context, c *Caller, in api.CheckRequest) (api.CheckResult, error) {
	const op = "peek"
	if err := limitArg(op, "limit", in.Limit); err != nil {
		return api.CheckResult{}, err
	}
	if err := c.needAgent(op); err != nil {
		return api.CheckResult{}, err
	}
	ds, n, err := o.hub.Inbox(ctx, c.Workspace, c.Agent, in.Limit)
	if err != nil {
		return api.CheckResult{}, err
	}
	return checkResult(ds, n-len(ds)), nil
}

// Wait blocks until a message for the caller passes the filter, or the
// timeout passes, and consumes it.
func (o *Ops) Wait(ctx context.Context, c *Caller, in api.WaitRequest) (api.WaitResult, error) {
	const op = "wait_for_message"
	timeout, err := secondsArg(op, in.Timeout, hub.DefaultWaitTimeout, hub.MaxWaitTimeout)
	if err != nil {
		return api.WaitResult{}, err
	}
	filter, err := hub.ParsePriorityFilter(in.PriorityFilter)
	if err != nil {
		return api.WaitResult{}, err
	}
	if err := c.needAgent(op); err != nil {
		return api.WaitResult{}, err
	}
	start := time.Now()
	o.hub.Called(ctx, c.Workspace, c.Agent)
	d, err := o.receive(ctx, c, timeout, filter, "")
	if err != nil {
		return api.WaitResult{}, err
	}
	return waitResult(d, start), nil
}

// Forever, as a Receive timeout, waits until a message comes.
const Forever time.Duration = -1

func waitResult(d *hub.Delivery, start time.Time) api.WaitResult {
	out := api.WaitResult{Status: "timeout", WaitedSeconds: int(time.Since(start).Seconds())}
	if d != nil {
		mi := Delivered(d)
		out.Status, out.Message = "message_received", &mi
	}
	return out
}

// Receive hands the caller its next message: at once when timeout is 0,
// else waiting up to timeout, or without bound when it is Forever. It
// returns nil when none came.
func (o *Ops) Receive(ctx context.Context, c *Caller, timeout time.Duration) (*api.MessageInfo, error) {
	if err := c.needAgent("receive"); err != nil {
		return nil, err
	}
	var d *hub.Delivery
	var err error
	if timeout == 0 {
		var r *hub.Reader
		if r, err = o.reader(c); err != nil {
			return nil, err
		}
		var ds []*hub.Delivery
		ds, _, err = o.hub.Receive(ctx, hub.ReceiveRequest{Workspace: c.Workspace, Agent: c.Agent, Reader: r, Call: c.Call, Limit: 1, Via: c.Via})
		if len(ds) > 0 {
			d = ds[0]
		}
	} else {
		d, err = o.receive(ctx, c, timeout, hub.PriorityFilter{}, "")
	}
	if err != nil || d == nil {
		return nil, err
	}
	mi := Delivered(d)
	return &mi, nil
}

// receive waits for the caller's next message, up to total or Forever. The
// hub bounds one wait to hub.MaxWaitTimeout, so a longer one is a chain of
// waits, with one keep-alive across the whole chain.
// With replyTo it waits for a reply to that message (WaitForReply).
func (o *Ops) receive(ctx context.Context, c *Caller, total time.Duration, filter hub.PriorityFilter, replyTo string) (*hub.Delivery, error) {
	r, err := o.reader(c)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	bound := total
	if total == Forever {
		bound = 0
	}
	progress := o.keepAlive(c, bound, func(time.Duration) string {
		waited := int(time.Since(start).Seconds())
		if bound == 0 {
			return fmt.Sprintf("waiting for a message (%ds)", waited)
		}
		return fmt.Sprintf("waiting for a message (%ds of %ds)", waited, int(bound.Seconds()))
	})
	for {
		chunk := hub.MaxWaitTimeout
		if total != Forever {
			left := total - time.Since(start)
			if left <= 0 {
				return nil, nil
			}
			chunk = min(chunk, left)
		}
		var d *hub.Delivery
		var err error
		if replyTo != "" {
			rr := hub.ReplyWaitRequest{Workspace: c.Workspace, Agent: c.Agent, Reader: r, Call: c.Call, MessageID: replyTo, Timeout: chunk, Via: c.Via}
			if progress != nil {
				rr.ProgressEvery = o.progressEvery
				rr.Progress = func(time.Duration) { progress(time.Since(start)) }
			}
			d, err = o.hub.WaitForReply(ctx, rr)
		} else {
			wr := hub.WaitRequest{Workspace: c.Workspace, Agent: c.Agent, Reader: r, Call: c.Call, Timeout: chunk, Filter: filter, Via: c.Via}
			if progress != nil {
				wr.ProgressEvery = o.progressEvery
				wr.Progress = func(time.Duration) { progress(time.Since(start)) }
			}
			d, err = o.hub.Next(ctx, wr)
		}
		if err != nil || d != nil {
			return d, err
		}
	}
}

// Unread counts the caller's unread messages.
func (o *Ops) Unread(ctx context.Context, c *Caller) (int, error) {
	return o.hub.Unread(ctx, c.Workspace, c.Agent)
}

// Clear deletes the caller's unread messages and counts them.
func (o *Ops) Clear(ctx context.Context, c *Caller) (int, error) {
	return o.hub.ClearInbox(ctx, c.Workspace, c.Agent)
}

// Broadcast sends one message to every other agent of the workspace that
// passes the filter.
func (o *Ops) Broadcast(ctx context.Context, c *Caller, in api.BroadcastRequest) (api.BroadcastResult, error) {
	const op = "broadcast_message"
	br := hub.BroadcastRequest{Workspace: c.Workspace, From: c.Agent, Content: in.Content, Priority: in.Priority, Door: c.Door}
	if f := in.Filter; f != nil {
		switch f.Status {
		case "", "all":
		case "active":
			br.ActiveOnly = true
		default:
			return api.BroadcastResult{}, hub.Errorf(op, hub.Invalid, "invalid filter.status %q: want all or active", f.Status)
		}
		br.Exclude = f.Exclude
	}
	if err := c.needAgent(op); err != nil {
		return api.BroadcastResult{}, err
	}
	res, err := o.hub.Broadcast(ctx, br)
	if err != nil {
		return api.BroadcastResult{}, err
	}
	out := api.BroadcastResult{Status: "no_recipients", SentTo: []string{}, FailedTo: []string{}, MessageIDs: []string{}}
	if res.Message != nil {
		out.Status = "sent"
		out.SentTo = res.Recipients
		out.TotalSent = len(res.Recipients)
		out.MessageIDs = []string{res.Message.ID}
	}
	return out, nil
}

// History lists messages of the workspace, newest first.
func (o *Ops) History(ctx context.Context, c *Caller, in api.HistoryRequest) (api.HistoryResult, error) {
	if err := limitArg("history", "limit", in.Limit); err != nil {
		return api.HistoryResult{}, err
	}
	ms, err := o.hub.History(ctx, c.Workspace, hub.HistoryQuery{Thread: in.Thread, Agent: in.With, Viewer: ReadViewer(c), Limit: in.Limit})
	if err != nil {
		return api.HistoryResult{}, err
	}
	return api.HistoryResult{Messages: Messages(ms)}, nil
}

// GetMessage returns one message by its id.
func (o *Ops) GetMessage(ctx context.Context, c *Caller, in api.MessageRequest) (api.MessageInfo, error) {
	m, err := o.message(ctx, c, "get message", in.ID)
	if err != nil {
		return api.MessageInfo{}, err
	}
	return Message(m), nil
}

// Thread returns every message of the thread a message belongs to, oldest first.
func (o *Ops) Thread(ctx context.Context, c *Caller, in api.ThreadRequest) (api.HistoryResult, error) {
	m, err := o.message(ctx, c, "get_thread", in.MessageID)
	if err != nil {
		return api.HistoryResult{}, err
	}
	ms, err := o.hub.History(ctx, c.Workspace, hub.HistoryQuery{Thread: m.ThreadID, Viewer: ReadViewer(c), Limit: 1000})
	if err != nil {
		return api.HistoryResult{}, err
	}
	// History is newest first; a thread reads oldest first.
	for i, j := 0, len(ms)-1; i < j; i, j = i+1, j-1 {
		ms[i], ms[j] = ms[j], ms[i]
	}
	return api.HistoryResult{Messages: Messages(ms)}, nil
}

// Receipt settles what the caller's reader (a JSON API reader that asked for
// receipts, named again by its key) holds of the messages: confirmed read, or
// put back.
func (o *Ops) Receipt(ctx context.Context, c *Caller, in api.ReceiptRequest) (api.ReceiptResult, error) {
	const op = "receipt"
	if len(in.MessageIDs) == 0 {
		return api.ReceiptResult{}, hub.Errorf(op, hub.Invalid, "no message ids")
	}
	if c.Reader == nil && (c.ReadAs == nil || c.ReadAs.Key == "") {
		return api.ReceiptResult{}, hub.Errorf(op, hub.Invalid, "no reader: send the %s header the read's response carried", api.HeaderReader)
	}
	r, err := o.reader(c)
	if err != nil {
		return api.ReceiptResult{}, err
	}
	n, err := r.Receipt(ctx, in.MessageIDs, in.Received)
	return api.ReceiptResult{Count: n}, err
}
