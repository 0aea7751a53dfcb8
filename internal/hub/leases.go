package hub

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Delivery defaults.
const (
	// DefaultLease is how long a delivery stays with a reader that neither
	// confirms nor releases it. Front doors release at once when they learn
	// their reader is gone (a closed connection, a deleted or expired
	// session); the lease is the backstop for what they cannot learn, and as
	// long as an idle MCP session lives, so that a reader that is merely
	// slow does not see its message again.
	DefaultLease = 30 * time.Minute
	// DefaultSweepEvery is how often Run looks for ended leases and overdue
	// acknowledgements.
	DefaultSweepEvery = time.Second
)

// Confirm marks read what reader holds (only the messages with the ids, if any
// are given): the reader is known to have them. Deliveries no longer leased to
// the reader are left alone. It returns how many were confirmed.
func (h *Hub) Confirm(ctx context.Context, reader string, messageIDs []string) (int, error) {
	if reader == "" {
		return 0, Errorf("confirm", Invalid, "no reader to confirm for")
	}
	ds, err := h.store.Confirm(ctx, reader, messageIDs, h.now().UTC())
	if err != nil {
		return 0, withOp("confirm", err)
	}
	h.publishDeliveries(EventMessageRead, ds)
	return len(ds), nil
}

// pendingConfirms takes the confirmations not yet written of the reader
// with the key (its own ledger, Reader.pending), and the time to write them
// (and to hand out with them) at. The time is read under the same lock, so
// a hand-out of a later take is always later than it: a confirmation taken
// here never confirms a lease made after it.
func (h *Hub) pendingConfirms(key string) (r *Reader, ids []string, now time.Time) {
	h.confirmMu.Lock()
	defer h.confirmMu.Unlock()
	if r = h.owed[key]; r != nil {
		ids, r.pending = r.pending, nil
		delete(h.owed, key)
	}
	return r, ids, h.now().UTC()
}

// flushConfirms writes the confirmations not yet written of the reader with
// the key, or of every reader if key is "".
func (h *Hub) flushConfirms(ctx context.Context, key string) {
	var (
		owed = map[*Reader][]string{}
		at   time.Time
	)
	if key != "" {
		r, ids, now := h.pendingConfirms(key)
		if len(ids) == 0 {
			return
		}
		owed[r], at = ids, now
	} else {
		h.confirmMu.Lock()
		for _, r := range h.owed {
			owed[r], r.pending = r.pending, nil
		}
		clear(h.owed)
		at = h.now().UTC()
		h.confirmMu.Unlock()
	}
	for r, ids := range owed {
		ds, err := h.store.Confirm(ctx, r.key, ids, at)
		if err != nil {
			h.log.Warn("confirm delivered messages", "reader", r.key, "err", err)
			r.confirmLater(ids) // try again at the next sweep
			continue
		}
		h.publishDeliveries(EventMessageRead, ds)
	}
}

// Release puts back in their inboxes, in their places, the deliveries that
// reader holds unconfirmed (only the messages with the ids, if any are given),
// marked redelivered, and wakes their recipients. Front doors call it when a
// reader is gone: its session ended, or a response could not be written. It
// returns how many went back.
func (h *Hub) Release(ctx context.Context, reader string, messageIDs []string) (int, error) {
	if reader == "" {
		return 0, Errorf("release", Invalid, "no reader to release for")
	}
	return h.release(ctx, ReleaseQuery{Reader: reader, MessageIDs: messageIDs})
}

func (h *Hub) release(ctx context.Context, q ReleaseQuery) (int, error) {
	if q.Reader != "" {
		// What the reader confirmed is not put back.
		h.flushConfirms(ctx, q.Reader)
	}
	ds, err := h.store.Release(ctx, q)
	if err != nil {
		h.log.Warn("release deliveries", "reader", q.Reader, "err", err)
		return 0, withOp("release", err)
	}
	h.publishDeliveries(EventMessageRedelivered, ds)
	h.wakeDeliveries(ds)
	return len(ds), nil
}

// Reopen puts the agent's copies of the messages back in its inbox, marked
// redelivered, whether they are still leased or were confirmed already (not
// acked): their reader says it gave them up, even after a front door took
// them for received (an MCP client that cancels a request ignores its
// response, and may say so after its next request). It returns how many went
// back.
func (h *Hub) Reopen(ctx context.Context, ws, agent string, messageIDs []string) (int, error) {
	ds, err := h.store.Reopen(ctx, ws, agent, messageIDs)
	if err != nil {
		return 0, withOp("reopen", err)
	}
	h.publishDeliveries(EventMessageRedelivered, ds)
	h.wakeDeliveries(ds)
	return len(ds), nil
}

// Recover puts back in their inboxes the deliveries this daemon leased
// before it started again: every reader of before is gone (the daemon
// stopped or crashed before they confirmed). Call it at start, before
// serving. On a store that daemons share, the others' leases are left to
// them (ReleaseQuery.Mine). It returns how many went back.
func (h *Hub) Recover(ctx context.Context) (int, error) {
	n, err := h.release(ctx, ReleaseQuery{Mine: true})
	if n > 0 {
		h.log.Info("returned unconfirmed deliveries to their inboxes", "count", n)
	}
	return n, err
}

// Ack records that agent acknowledges the messages with the ids (which also
// marks them read). Acking a message twice is not an error; a message that
// does not exist or was not sent to agent is.
func (h *Hub) Ack(ctx context.Context, ws, agent string, messageIDs []string) (int, error) {
	const op = "ack"
	if agent == "" {
		return 0, Errorf(op, Invalid, "no agent identity: pass --agent, or the Parley-Agent header")
	}
	if len(messageIDs) == 0 {
		return 0, Errorf(op, Invalid, "no message ids to acknowledge")
	}
	ds, err := h.store.Ack(ctx, ws, agent, messageIDs, h.now().UTC())
	if err != nil {
		return 0, withOp(op, err)
	}
	if len(ds) < len(messageIDs) {
		// Say which ids were wrong rather than ack silently less than asked.
		for _, id := range messageIDs {
			if slices.ContainsFunc(ds, func(d *Delivery) bool { return d.MessageID == id }) {
				continue
			}
			all, err := h.store.Deliveries(ctx, ws, id)
			if err != nil {
				if IsNotFound(err) {
					h.publishDeliveries(EventMessageAcked, ds)
					return len(ds), Errorf(op, NotFound, "no message %q in this workspace", id)
				}
				return len(ds), withOp(op, err)
			}
			if !slices.ContainsFunc(all, func(d *Delivery) bool { return d.Recipient == agent }) {
				h.publishDeliveries(EventMessageAcked, ds)
				return len(ds), Errorf(op, Forbidden, "message %s was not sent to %s: only its recipients can acknowledge it", id, agent)
			}
		}
	}
	h.publishDeliveries(EventMessageAcked, ds)
	return len(ds), nil
}

// MessageStatus is a message with the state of each recipient's copy.
type MessageStatus struct {
	Message    *Message
	Deliveries []*Delivery // ordered by recipient
}

// MessageStatus reports where each copy of a message stands. Its sender sees
// every recipient's copy, a recipient its own, and a caller with no agent
// identity (the operator) every copy.
func (h *Hub) MessageStatus(ctx context.Context, ws, agent, messageID string) (*MessageStatus, error) {
	const op = "message status"
	m, err := h.store.Message(ctx, ws, messageID)
	if err != nil {
		if IsNotFound(err) {
			return nil, Errorf(op, NotFound, "no message %q in this workspace", messageID)
		}
		return nil, withOp(op, err)
	}
	// A status shows what readers confirmed, written or not.
	h.flushConfirms(ctx, "")
	ds, err := h.store.Deliveries(ctx, ws, messageID)
	if err != nil {
		return nil, withOp(op, err)
	}
	if agent != "" && agent != m.From {
		// A recipient sees its own copy; anyone else (another agent of the
		// thread) none.
		ds = slices.DeleteFunc(ds, func(d *Delivery) bool { return d.Recipient != agent })
	}
	return &MessageStatus{Message: m, Deliveries: ds}, nil
}

// Overdue lists the messages of ws sent by sender (any sender if empty) whose
// ack deadline passed with recipients that have not acked, oldest deadline first.
func (h *Hub) Overdue(ctx context.Context, ws, sender string) ([]*Overdue, error) {
	od, err := h.store.Overdue(ctx, ws, sender, h.now().UTC())
	return od, withOp("list overdue", err)
}

// ReplyWaitRequest blocks for a reply to a message.
type ReplyWaitRequest struct {
	Workspace string
	Agent     string
	Reader    *Reader // holds the delivery; see ReceiveRequest
	Call      string
	MessageID string   // the message replied to
	Via       WakePath // default WakeWait
	Timeout   time.Duration
	// Progress, if set, is called about every ProgressEvery while waiting.
	Progress      func(waited time.Duration)
	ProgressEvery time.Duration
}

// WaitForReply hands the agent the first message in the thread of r.MessageID
// that was sent after it, addressed to the agent, by one of the others the
// message went between (for a task: its claimant's result), blocking as Next
// does: request and response between agents in one call. Other messages stay
// in the inbox.
func (h *Hub) WaitForReply(ctx context.Context, r ReplyWaitRequest) (*Delivery, error) {
	const op = "wait for reply"
	m, err := h.store.Message(ctx, r.Workspace, r.MessageID)
	if err != nil {
		if IsNotFound(err) {
			return nil, Errorf(op, NotFound, "no message %q in this workspace", r.MessageID)
		}
		return nil, withOp(op, err)
	}
	repliers, resultOf, err := h.repliers(ctx, m, r.Agent)
	if err != nil {
		return nil, withOp(op, err)
	}
	// Remembered until the reply comes, whether this wait sees it or not:
	// the agent's working set names what it still waits for.
	h.noteAsk(r.Workspace, r.Agent, m, repliers, resultOf)
	d, err := h.Next(ctx, WaitRequest{Workspace: r.Workspace, Agent: r.Agent, Reader: r.Reader, Call: r.Call, Timeout: r.Timeout, Via: r.Via,
		Progress: r.Progress, ProgressEvery: r.ProgressEvery, thread: m.ThreadID, after: m.ID, repliers: repliers, resultOf: resultOf})
	if err != nil {
		if e, ok := err.(*Error); ok && e.Op == "wait" {
			e.Op = op
		}
	}
	return d, err
}

// repliers are who may answer m for agent, waiting for a reply to it: the
// others it went between (its sender and recipients but agent); for a task
// sent to a queue, its claimant, whose result complete_task marks
// (resultOf). Anyone else's message in the thread is not the answer: it
// stays in the inbox as ordinary mail.
func (h *Hub) repliers(ctx context.Context, m *Message, agent string) (repliers []string, resultOf string, err error) {
	ds, err := h.store.Deliveries(ctx, m.Workspace, m.ID)
	if err != nil {
		return nil, "", err
	}
	repliers = []string{} // not nil: a filter, even with nobody in it
	if m.From != agent {
		repliers = append(repliers, m.From)
	}
	for _, d := range ds {
		switch {
		case IsQueue(d.Recipient):
			resultOf = m.ID
		case d.Recipient != agent && !slices.Contains(repliers, d.Recipient):
			repliers = append(repliers, d.Recipient)
		}
	}
	return repliers, resultOf, nil
}

// Run sweeps until ctx ends: deliveries whose lease ran out go back to their
// inboxes, and the sender of a message whose ack deadline passed unacked gets
// one notice. On a store that keeps heartbeats it beats, and gives back what
// dead daemons held (liveness.go). A daemon runs it once, beside the hub.
func (h *Hub) Run(ctx context.Context) error {
	if ls, ok := h.store.(LivenessStore); ok {
		done := make(chan struct{})
		go func() { h.runLiveness(ctx, ls); close(done) }()
		defer func() { <-done }()
	}
	t := time.NewTicker(h.sweepEvery)
	defer t.Stop()
	watched := make(chan struct{})
	go func() { h.watchHealth(ctx); close(watched) }()
	defer func() { <-watched }()
	for {
		select {
		case <-ctx.Done():
			// A daemon that stops keeps what its readers confirmed.
			h.flushConfirms(context.WithoutCancel(ctx), "")
			return nil
		case <-t.C:
			h.Sweep(ctx)
		}
	}
}

// Sweep does one round of Run's work now.
func (h *Hub) Sweep(ctx context.Context) {
	h.flushConfirms(ctx, "")
	now := h.now().UTC()
	// Live holders renew before anything runs out.
	h.renewLive(ctx, now)
	h.release(ctx, ReleaseQuery{Expired: now})
	due, err := h.store.DueAcks(ctx, now)
	if err != nil {
		h.log.Warn("find overdue acks", "err", err)
		return
	}
	for _, od := range due {
		h.noticeOverdue(ctx, od)
	}
	h.expire(ctx, now)
	h.expireProvisional(ctx, now)
}

// NoticeSender is the sender of Parley's own notices (overdue acks).
const NoticeSender = "parley"

// noticeOverdue tells the sender of an overdue message, once, who has not acked.
func (h *Hub) noticeOverdue(ctx context.Context, od *Overdue) {
	m := od.Message
	content := fmt.Sprintf("Ack overdue: your message %s to %s was not acknowledged by %s before its deadline %s.",
		m.ID, m.To, strings.Join(od.Pending, ", "), m.AckDeadline.UTC().Format(time.RFC3339))
	n, err := h.newMessage(ctx, SendRequest{Workspace: m.Workspace, From: NoticeSender, To: m.From, Door: DoorDaemon,
		Content: content, Priority: string(High), TTL: NoTTL,
		Metadata: map[string]string{"kind": "ack_overdue", "message_id": m.ID, "pending": strings.Join(od.Pending, ",")}})
	if err == nil {
		_, err = h.deliver(ctx, n, []string{m.From}, nil)
	}
	if err != nil {
		h.log.Warn("send overdue notice", "workspace", m.Workspace, "message", m.ID, "err", err)
	}
}

// publishDeliveries announces one event per delivery.
func (h *Hub) publishDeliveries(kind EventKind, ds []*Delivery) {
	for _, d := range ds {
		h.publish(deliveryEvent(kind, d, time.Time{}))
		if kind == EventMessageRedelivered && IsQueue(d.Recipient) {
			h.publish(Event{Kind: EventTaskReleased, Workspace: d.Workspace, Agent: d.Recipient, MessageID: d.MessageID,
				Count: d.Count, Recipients: []string{d.Recipient}})
		}
	}
}

// wakeDeliveries wakes the recipients of deliveries back in their inboxes.
func (h *Hub) wakeDeliveries(ds []*Delivery) {
	byWS := map[string][]string{}
	for _, d := range ds {
		if !slices.Contains(byWS[d.Workspace], d.Recipient) {
			byWS[d.Workspace] = append(byWS[d.Workspace], d.Recipient)
		}
	}
	for ws, names := range byWS {
		h.wakeLocal(ws, names) // the other daemons wake theirs at the events
	}
}
