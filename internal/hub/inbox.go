package hub

import (
	"context"
	"slices"
	"time"
)

// ReceiveRequest takes messages from an agent's inbox for a reader.
type ReceiveRequest struct {
	Workspace string
	Agent     string
	// Reader is who the messages are handed to (a door's Reader): they
	// stay leased to it, and it records what Call was handed, until its
	// client is known to have them or not. Nil marks them read at once:
	// only for readers that have a message the moment the call returns.
	Reader *Reader
	// Call names the request of the reader's client that reads (its
	// JSON-RPC id), within the reader.
	Call   string
	Limit  int // 0: DefaultCheckLimit; at most MaxCheckLimit
	Filter PriorityFilter
	// Via is the wake path the read records (default WakeCheck).
	Via WakePath
}

// Receive hands up to r.Limit of the agent's messages to r.Reader in inbox
// order and reports how many stay in the inbox. It does not block.
func (h *Hub) Receive(ctx context.Context, r ReceiveRequest) (ds []*Delivery, remaining int, err error) {
	const op = "check messages"
	if r.Agent == "" {
		return nil, 0, Errorf(op, Invalid, "no agent identity: pass --agent, or the Parley-Agent header")
	}
	if r.Limit <= 0 {
		r.Limit = DefaultCheckLimit
	}
	h.Touch(ctx, r.Workspace, r.Agent)
	via := r.Via
	if via == "" {
		via = WakeCheck
	}
	ds, drained, err := h.takeBudgeted(ctx, TakeQuery{Workspace: r.Workspace, Recipient: r.Agent, Reader: r.Reader.Key(),
		MaxRank: r.Filter.MaxRank(), Limit: min(r.Limit, MaxCheckLimit), Via: via, lease: r.Reader.leaseOf()})
	r.Reader.handed(ctx, r.Call, ds...)
	if err != nil {
		return nil, 0, withOp(op, err)
	}
	if drained && r.Filter.MaxRank() >= Low.Rank() {
		// The take emptied the inbox: nothing to count (most checks).
		return ds, 0, nil
	}
	remaining, err = h.store.Unread(ctx, r.Workspace, r.Agent, Low.Rank())
	if err != nil {
		return ds, 0, withOp(op, err)
	}
	return ds, remaining, nil
}

// Check reads up to limit messages of the agent at once, without a lease, and
// reports how many stay unread. Front doors that know their reader use
// Receive.
func (h *Hub) Check(ctx context.Context, ws, agent string, limit int) (msgs []*Message, remaining int, err error) {
	ds, remaining, err := h.Receive(ctx, ReceiveRequest{Workspace: ws, Agent: agent, Limit: limit})
	return messagesOf(ds), remaining, err
}

// take hands deliveries out, publishes message.delivered (or message.read
// when there is no reader), and takes them back if ctx ended meanwhile: a
// caller that is gone must not take anything with it.
func (h *Hub) take(ctx context.Context, q TakeQuery) ([]*Delivery, error) {
	var owed *Reader
	if q.Reader != "" {
		owed, q.Confirm, q.Now = h.pendingConfirms(q.Reader)
		lease := h.lease
		if q.lease > 0 {
			lease = q.lease
		}
		q.LeaseUntil = q.Now.Add(lease)
	} else {
		q.Now = h.now().UTC()
	}
	ds, confirmed, err := h.store.Take(ctx, q)
	h.publishDeliveries(EventMessageRead, confirmed)
	if err != nil && len(q.Confirm) > 0 {
		owed.confirmLater(q.Confirm) // not written: try again later
	}
	if err != nil || len(ds) == 0 {
		return nil, err
	}
	kind := EventMessageDelivered
	if q.Reader == "" {
		kind = EventMessageRead
	}
	h.publishDeliveries(kind, ds)
	if err := context.Cause(ctx); err != nil && q.Reader != "" {
		h.release(context.WithoutCancel(ctx), ReleaseQuery{Reader: q.Reader, MessageIDs: idsOf(ds)})
		return nil, err
	}
	return ds, nil
}

// WaitRequest blocks for the next message of an agent.
type WaitRequest struct {
	Workspace string
	Agent     string
	// Reader holds the delivery, and Call names the request; see
	// ReceiveRequest.
	Reader  *Reader
	Call    string
	Timeout time.Duration // 0: DefaultWaitTimeout; at most MaxWaitTimeout
	Filter  PriorityFilter
	// Via is the wake path the read records (default WakeWait).
	Via WakePath
	// Progress, if set, is called about every ProgressEvery while waiting.
	Progress      func(waited time.Duration)
	ProgressEvery time.Duration // 0: 5s

	// thread, after, repliers and resultOf narrow the wait to replies
	// (WaitForReply; TakeQuery's fields of those names).
	thread, after string
	repliers      []string
	resultOf      string
}

// A blocked wait whose store cannot serve looks again after storeRetryMin,
// doubling up to storeRetryMax.
const storeRetryMin, storeRetryMax = 50 * time.Millisecond, 2 * time.Second

// Wait is Next without a reader's lease: the message is read once returned.
// Front doors that know their reader use Next.
func (h *Hub) Wait(ctx context.Context, r WaitRequest) (*Message, error) {
	d, err := h.Next(ctx, r)
	if d == nil {
		return nil, err
	}
	return d.Message, err
}

// Next hands the agent's next message that passes the filter to r.Reader,
// blocking until one arrives, the timeout passes (nil delivery, nil error) or
// ctx ends (an error; nothing is taken). It registers interest before it
// looks, so a message sent at any moment wakes it.
func (h *Hub) Next(ctx context.Context, r WaitRequest) (*Delivery, error) {
	const op = "wait"
	if r.Agent == "" {
		return nil, Errorf(op, Invalid, "no agent identity: pass --agent, or the Parley-Agent header")
	}
	if r.Timeout <= 0 {
		r.Timeout = DefaultWaitTimeout
	}
	if r.Timeout > MaxWaitTimeout {
		return nil, Errorf(op, Invalid, "timeout %s is over the maximum %s", r.Timeout, MaxWaitTimeout)
	}
	if err := context.Cause(ctx); err != nil {
		return nil, withOp(op, err)
	}
	key := inboxKey{r.Workspace, r.Agent}
	via := r.Via
	if via == "" {
		via = WakeWait
	}
	q := TakeQuery{Workspace: r.Workspace, Recipient: r.Agent, Reader: r.Reader.Key(),
		MaxRank: r.Filter.MaxRank(), Thread: r.thread, After: r.after, Repliers: r.repliers, ResultOf: r.resultOf,
		Limit: 1, Via: via, lease: r.Reader.leaseOf()}
	d, err := h.block(ctx, key, key, r.Timeout, r.Progress, r.ProgressEvery, q)
	if d != nil {
		r.Reader.handed(ctx, r.Call, d)
	}
	return d, withOp(op, err)
}

// block hands out the first delivery q selects, waiting for wake-ups on the
// inbox key until one comes, the timeout passes (nil delivery, nil error) or
// ctx ends. It registers interest before it looks, so a message sent at any
// moment wakes it, or is handed to it (handoff.go); the agent who waits
// counts as present meanwhile.
func (h *Hub) block(ctx context.Context, key, agent inboxKey, timeout time.Duration,
	progress func(time.Duration), every time.Duration, q TakeQuery) (d *Delivery, err error) {
	w := newWaiter(q)
	h.mu.Lock()
	if h.waiters[key] == nil {
		h.waiters[key] = make(map[*waiter]struct{})
	}
	h.waiters[key][w] = struct{}{}
	h.sessions[agent]++ // a blocked waiter is present
	h.mu.Unlock()
	h.bump(agent, func(a *activity) { a.blocked++ })
	defer h.bump(agent, func(a *activity) { a.blocked-- })
	defer func() {
		h.mu.Lock()
		delete(h.waiters[key], w)
		if len(h.waiters[key]) == 0 {
			delete(h.waiters, key)
		}
		if h.sessions[agent]--; h.sessions[agent] <= 0 {
			delete(h.sessions, agent)
		}
		held := w.claimed || len(w.handed) > 0
		h.mu.Unlock()
		if held && d == nil {
			// A send handed this wait a message as it ended: take it
			// (at the timeout), or put it back (ctx ended, or an error).
			if got := <-w.handed; got != nil {
				if err == nil {
					d, err = h.received(ctx, got)
				} else {
					h.giveBack(ctx, got)
				}
			}
		}
		h.Touch(context.Background(), agent.ws, agent.name)
	}()
	h.Touch(ctx, agent.ws, agent.name)

	start := h.now()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var tick <-chan time.Time
	if progress != nil {
		if every <= 0 {
			every = 5 * time.Second
		}
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	// While the store cannot serve (PostgreSQL restarting), a wait that is
	// already blocked stays blocked: it looks again after a backoff, or at
	// its next wake-up, and ends with the outage's error only if its timeout
	// passes first. Its first look fails at once, so a caller learns of an
	// outage that was there before it waited.
	var (
		down    error
		retry   <-chan time.Time
		backoff = storeRetryMin
	)
	for first := true; ; first = false {
		if h.held(w) {
			// A send holds this wait: its outcome comes first.
			if got := <-w.handed; got != nil {
				return h.received(ctx, got)
			}
		}
		ds, err := h.look(ctx, q, first)
		switch {
		case err == nil && len(ds) > 0:
			return ds[0], nil
		case err == nil:
			down, retry, backoff = nil, nil, storeRetryMin
			h.park(w)
		case !first && KindOf(err) == Unavailable && ctx.Err() == nil:
			down, retry = err, time.After(backoff)
			backoff = min(2*backoff, storeRetryMax)
		case context.Cause(ctx) != nil:
			// ctx ended while the store looked (the client hung up, its
			// token was revoked): say why, not what the store made of it.
			return nil, context.Cause(ctx)
		default:
			return nil, err
		}
	sleep:
		select {
		case got := <-w.handed:
			if got != nil {
				return h.received(ctx, got)
			}
			// The send failed: nothing new, but look again.
		case <-w.wake:
		case <-retry:
		case <-timer.C:
			return nil, down
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-tick:
			progress(h.now().Sub(start))
			goto sleep
		}
	}
}

// look takes what q selects for a blocked wait. A wait mostly begins on an
// empty inbox, so its first look counts the inbox on the read pool first
// and takes only if there is something: the take queues on the store's one
// writer (about ten times the count's cost on SQLite), behind the sends
// that would wake this wait. A message sent after the count is handed to
// the wait by its send (handoff.go), or wakes it to take. The reader's
// pending confirmations, which a take would have written, ride its next
// take instead (or the next sweep).
func (h *Hub) look(ctx context.Context, q TakeQuery, first bool) ([]*Delivery, error) {
	if first {
		// Unread counts what q selects before its thread and position
		// narrow it: none there means none for q.
		if n, err := h.store.Unread(ctx, q.Workspace, q.Recipient, q.MaxRank); err != nil || n == 0 {
			return nil, err
		}
	}
	return h.take(ctx, q)
}

// Peek lists unread messages without taking them.
func (h *Hub) Peek(ctx context.Context, ws, agent string, limit int) ([]*Message, int, error) {
	ds, n, err := h.Inbox(ctx, ws, agent, limit)
	return messagesOf(ds), n, err
}

// Inbox lists the agent's inbox (queued and redelivered copies) without
// taking anything, and counts it.
func (h *Hub) Inbox(ctx context.Context, ws, agent string, limit int) ([]*Delivery, int, error) {
	if limit <= 0 {
		limit = DefaultCheckLimit
	}
	ds, err := h.store.Peek(ctx, ws, agent, min(limit, MaxCheckLimit))
	if err != nil {
		return nil, 0, withOp("peek", err)
	}
	ds = h.trimBudget(ds)
	n, err := h.store.Unread(ctx, ws, agent, Low.Rank())
	if err != nil {
		return nil, 0, withOp("peek", err)
	}
	return ds, n, nil
}

// Unread counts the agent's unread messages.
func (h *Hub) Unread(ctx context.Context, ws, agent string) (int, error) {
	n, err := h.store.Unread(ctx, ws, agent, Low.Rank())
	return n, withOp("unread", err)
}

// UnreadByAgent counts the unread messages of every agent of ws that has
// any, in one store query.
func (h *Hub) UnreadByAgent(ctx context.Context, ws string) (map[string]int, error) {
	n, err := h.store.UnreadByRecipient(ctx, ws, Low.Rank())
	return n, withOp("unread", err)
}

// ClearInbox marks every unread message of the agent read.
func (h *Hub) ClearInbox(ctx context.Context, ws, agent string) (int, error) {
	n, err := h.store.ClearInbox(ctx, ws, agent)
	return n, withOp("clear inbox", err)
}

// History lists messages of ws, newest first.
func (h *Hub) History(ctx context.Context, ws string, q HistoryQuery) ([]*Message, error) {
	if q.Limit <= 0 || q.Limit > MaxCheckLimit {
		q.Limit = 100
	}
	ms, err := h.store.History(ctx, ws, q)
	return ms, withOp("history", err)
}

// Message returns one message.
func (h *Hub) Message(ctx context.Context, ws, id string) (*Message, error) {
	m, err := h.store.Message(ctx, ws, id)
	return m, withOp("get message", err)
}

// Readable reports whether viewer may read m, as HistoryQuery.Viewer
// decides: m is in a thread in which viewer sent or received a message. An
// empty viewer reads everything.
func (h *Hub) Readable(ctx context.Context, viewer string, m *Message) (bool, error) {
	if viewer == "" || m.From == viewer {
		return true, nil
	}
	if m.ThreadID == "" { // a thread of its own: is it viewer's copy?
		ds, err := h.store.Deliveries(ctx, m.Workspace, m.ID)
		if err != nil {
			return false, withOp("read rule", err)
		}
		return slices.ContainsFunc(ds, func(d *Delivery) bool { return d.Recipient == viewer }), nil
	}
	ms, err := h.store.History(ctx, m.Workspace, HistoryQuery{Thread: m.ThreadID, Viewer: viewer, Limit: 1})
	if err != nil {
		return false, withOp("read rule", err)
	}
	return len(ms) > 0, nil
}

// Workspaces lists the workspaces with state.
func (h *Hub) Workspaces(ctx context.Context) ([]string, error) {
	ws, err := h.store.Workspaces(ctx)
	return ws, withOp("list workspaces", err)
}

func messagesOf(ds []*Delivery) []*Message {
	if ds == nil {
		return nil
	}
	ms := make([]*Message, len(ds))
	for i, d := range ds {
		ms[i] = d.Message
	}
	return ms
}

func idsOf(ds []*Delivery) []string {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.MessageID
	}
	return ids
}
