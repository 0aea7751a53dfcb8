package hub

import (
	"context"
	"slices"
	"time"
)

// Working sets (issue 28): what an agent holds and owes, kept by the daemon
// so that it survives the agent's compaction (its client summarizing its
// context away): the tasks it claimed, the files it reserved, the answers it
// waits for, and how much mail it has not read. The my_work tool and the
// compaction hooks hand it back.

// WorkingSet is an agent's work in progress, as the daemon keeps it.
type WorkingSet struct {
	Workspace, Agent string
	// Tasks are the tasks the agent has claimed and not completed or
	// released, with their messages.
	Tasks []*Delivery
	// Reservations are its live file reservations.
	Reservations []*Reservation
	// Asks are its messages still waiting for an answer: a reply it
	// waited for (wait_for_reply) that has not come, or acks it asked for.
	Asks []Ask
	// Unread counts the messages in its inbox.
	Unread int
}

// Ask is a message of the agent still waiting for an answer.
type Ask struct {
	Message *Message
	// Kind is "reply" (the agent waited for a reply that has not come) or
	// "ack" (recipients have not acknowledged it).
	Kind string
	// Pending are the recipients whose ack it waits for (ack).
	Pending []string
	// Since is when the agent began waiting for the reply (reply), or
	// when it sent the message (ack).
	Since time.Time
}

// The kinds of ask.
const (
	AskReply = "reply"
	AskAck   = "ack"
)

// Bounds of a working set: it is read into an agent's context.
const (
	maxWorkTasks   = 500 // open tasks of a workspace looked through
	maxAsks        = 20  // replies awaited, per agent, remembered
	maxAckAsks     = 50
	askForgetAfter = 7 * 24 * time.Hour
)

// ask is a reply an agent waits for (wait_for_reply), remembered after the
// wait ends until the reply comes.
type ask struct {
	id, thread string
	since      time.Time
	// repliers are who may answer (Hub.repliers); resultOf, a task's id
	// whose result answers.
	repliers []string
	resultOf string
}

// noteAsk remembers that the agent waits for a reply to m from repliers
// (or m's result, resultOf).
func (h *Hub) noteAsk(ws, agent string, m *Message, repliers []string, resultOf string) {
	k := inboxKey{ws, agent}
	now := h.now().UTC()
	h.asksMu.Lock()
	defer h.asksMu.Unlock()
	as := slices.DeleteFunc(h.asks[k], func(a ask) bool { return a.id == m.ID || now.Sub(a.since) > askForgetAfter })
	as = append(as, ask{id: m.ID, thread: m.ThreadID, since: now, repliers: repliers, resultOf: resultOf})
	if len(as) > maxAsks {
		as = as[len(as)-maxAsks:]
	}
	h.asks[k] = as
}

// answered forgets the agent's ask of message id: its reply came.
func (h *Hub) answered(ws, agent, id string) {
	k := inboxKey{ws, agent}
	h.asksMu.Lock()
	defer h.asksMu.Unlock()
	h.asks[k] = slices.DeleteFunc(h.asks[k], func(a ask) bool { return a.id == id })
	if len(h.asks[k]) == 0 {
		delete(h.asks, k)
	}
}

// Work returns the agent's working set.
func (h *Hub) Work(ctx context.Context, ws, agent string) (*WorkingSet, error) {
	const op = "working set"
	if err := ValidName("agent name", agent); err != nil {
		return nil, withOp(op, err)
	}
	w := &WorkingSet{Workspace: ws, Agent: agent}
	open, err := h.store.OpenTasks(ctx, ws, maxWorkTasks)
	if err != nil {
		return nil, withOp(op, err)
	}
	mine := NameHash(ws, agent)
	for _, d := range open {
		if d.State == Delivered && ReaderHash(d.Reader) == mine {
			w.Tasks = append(w.Tasks, d)
		}
	}
	if w.Reservations, err = h.Reservations(ctx, ws, agent); err != nil {
		return nil, withOp(op, err)
	}
	if w.Asks, err = h.replyAsks(ctx, ws, agent); err != nil {
		return nil, withOp(op, err)
	}
	acks, err := h.store.Unacked(ctx, ws, agent, maxAckAsks)
	if err != nil {
		return nil, withOp(op, err)
	}
	for _, od := range acks {
		w.Asks = append(w.Asks, Ask{Message: od.Message, Kind: AskAck, Pending: od.Pending, Since: od.Message.CreatedAt})
	}
	if w.Unread, err = h.Unread(ctx, ws, agent); err != nil {
		return nil, withOp(op, err)
	}
	return w, nil
}

// replyAsks are the agent's remembered asks whose reply has not come: no
// message of the thread after the ask reached the agent from one of those
// it went between (or, for a task, its result). The store is the judge
// (the reply may have come through another daemon).
func (h *Hub) replyAsks(ctx context.Context, ws, agent string) ([]Ask, error) {
	k := inboxKey{ws, agent}
	h.asksMu.Lock()
	as := slices.Clone(h.asks[k])
	h.asksMu.Unlock()
	var out []Ask
	for _, a := range as {
		thread, err := h.store.History(ctx, ws, HistoryQuery{Thread: a.thread, Agent: agent, Limit: 200})
		if err != nil {
			return nil, err
		}
		var m *Message
		replied := false
		for _, t := range thread {
			switch {
			case t.ID == a.id:
				m = t
			case t.ID > a.id && t.From != agent:
				replied = replied || slices.Contains(a.repliers, t.From) || (a.resultOf != "" && t.Origin.Task == a.resultOf)
			}
		}
		if replied || m == nil {
			h.answered(ws, agent, a.id)
			continue
		}
		out = append(out, Ask{Message: m, Kind: AskReply, Since: a.since})
	}
	return out, nil
}

// ReaderHash is the agent part (its NameHash) of a reader key that names
// its agent (OpenReader's, AgentClaimKey's), or "" for one that does not.
func ReaderHash(key string) string {
	if len(key) < 13 || key[len(key)-13] != '-' {
		return ""
	}
	return key[len(key)-12:]
}
