package hub

import (
	"context"
	"time"
)

// reports how many stay unread.
func (h *Hub) Check(ctx context.Context, ws, agent string, limit int) (msgs []*Message, remaining int, err error) {
	const op = "check messages"
	if agent == "" {
		return nil, 0, Errorf(op, Invalid, "no agent identity: pass --agent, or the Parley-Agent header")
	}
	if limit <= 0 {
		limit = DefaultCheckLimit
	}
	limit = min(limit, MaxCheckLimit)
	h.Touch(ctx, ws, agent)
	msgs, err = h.store.Consume(ctx, ws, agent, Low.Rank(), limit)
	if err != nil {
		return nil, 0, withOp(op, err)
	}
	remaining, err = h.store.Unread(ctx, ws, agent, Low.Rank())
	if err != nil {
		return nil, 0, withOp(op, err)
	}
	return msgs, remaining, nil
}

// WaitRequest blocks for the next message of an agent.
type WaitRequest struct {
	Workspace string
	Agent     string
	Timeout   time.Duration // 0: DefaultWaitTimeout; at most MaxWaitTimeout
	Filter    PriorityFilter
	// Progress, if set, is called about every ProgressEvery while waiting.
	Progress      func(waited time.Duration)
	ProgressEvery time.Duration // 0: 5s
}

// ValidTimeout checks a wait timeout given in seconds; 0 means the default.
func ValidTimeout(seconds int) (time.Duration, error) {
	if seconds < 0 || time.Duration(seconds)*time.Second > MaxWaitTimeout {
		return 0, Errorf("", Invalid, "timeout %d s is out of range: want 0 to %d seconds", seconds, int(MaxWaitTimeout/time.Second))
	}
	if seconds == 0 {
		return DefaultWaitTimeout, nil
	}
	return time.Duration(seconds) * time.Second, nil
}

// Wait consumes the agent's next message that passes the filter, blocking until
// one arrives, the timeout passes (nil message, nil error) or ctx ends. It
// registers interest before it looks, so a message sent at any moment wakes it.
func (h *Hub) Wait(ctx context.Context, r WaitRequest) (*Message, error) {
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
	key := inboxKey{r.Workspace, r.Agent}
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.waiters[key] == nil {
		h.waiters[key] = make(map[chan struct{}]struct{})
	}
	h.waiters[key][ch] = struct{}{}
	h.sessions[key]++ // a blocked waiter is present
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.waiters[key], ch)
		if len(h.waiters[key]) == 0 {
			delete(h.waiters, key)
		}
		if h.sessions[key]--; h.sessions[key] <= 0 {
			delete(h.sessions, key)
		}
		h.mu.Unlock()
		h.Touch(context.Background(), r.Workspace, r.Agent)
	}()
	h.Touch(ctx, r.Workspace, r.Agent)

	start := h.now()
	timer := time.NewTimer(r.Timeout)
	defer timer.Stop()
	var tick <-chan time.Time
	if r.Progress != nil {
		every := r.ProgressEvery
		if every <= 0 {
			every = 5 * time.Second
		}
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		msgs, err := h.store.Consume(ctx, r.Workspace, r.Agent, r.Filter.MaxRank(), 1)
		if err != nil {
			return nil, withOp(op, err)
		}
		if len(msgs) > 0 {
			return msgs[0], nil
		}
	sleep:
		select {
		case <-ch:
		case <-timer.C:
			return nil, nil
		case <-ctx.Done():
			return nil, withOp(op, context.Cause(ctx))
		case <-tick:
			r.Progress(h.now().Sub(start))
			goto sleep
		}
	}
}

// Peek lists unread messages without consuming them.
func (h *Hub) Peek(ctx context.Context, ws, agent string, limit int) ([]*Message, int, error) {
	if limit <= 0 {
		limit = DefaultCheckLimit
	}
	msgs, err := h.store.Peek(ctx, ws, agent, min(limit, MaxCheckLimit))
	if err != nil {
		return nil, 0, withOp("peek", err)
	}
	n, err := h.store.Unread(ctx, ws, agent, Low.Rank())
	if err != nil {
		return nil, 0, withOp("peek", err)
	}
	return msgs, n, nil
}

// Unread counts the agent's unread messages.
func (h *Hub) Unread(ctx context.Context, ws, agent string) (int, error) {
	n, err := h.store.Unread(ctx, ws, agent, Low.Rank())
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

// Workspaces lists the workspaces with state.
func (h *Hub) Workspaces(ctx context.Context) ([]string, error) {
	ws, err := h.store.Workspaces(ctx)
	return ws, withOp("list workspaces", err)
}
