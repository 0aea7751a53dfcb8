package hub

import (
	"context"
	"strings"
	"time"
)

// Work queues. A message sent to queue:NAME has one recipient, the queue,
// and so one copy: its delivery. Claiming takes that copy from the queue's
// inbox the way a wait takes a message, leased to the claimant's reader; so
// every mechanism that returns an unconfirmed delivery returns an unfinished
// task (the claimant's session ends, its client goes away, the lease runs
// out, the daemon restarts), and the store's Take guarantees that two
// claimants never hold the same task. Completing confirms the copy (read:
// done) and tells the sender.

// QueuePrefix starts the address of a work queue: queue:NAME.
const QueuePrefix = "queue:"

// IsQueue reports whether a recipient is a work queue.
func IsQueue(recipient string) bool { return strings.HasPrefix(recipient, QueuePrefix) }

// Claim leases.
const (
	// DefaultClaimLease is how long a claim lasts unless its holder's
	// liveness renews it (claims.go) or the claimant asks otherwise: a
	// claimant that vanished without a trace (no session end reaches the
	// daemon, its heartbeat stopped) does not sit on its task for long.
	DefaultClaimLease = 2 * time.Minute
	MinClaimLease     = 5 * time.Second
	MaxClaimLease     = 24 * time.Hour
)

// Task events: MessageID is the task and Recipients its queue; Agent is the
// claimant (for task.released, the queue: a task goes back when its claimant
// gives it up, is gone, or lets the lease run out). task.claimed carries the
// task as Message.
const (
	EventTaskClaimed   EventKind = "task.claimed"
	EventTaskCompleted EventKind = "task.completed"
	EventTaskReleased  EventKind = "task.released"
)

// ClaimRequest takes the next task of a queue.
type ClaimRequest struct {
	Workspace string
	Agent     string // the claimant
	Queue     string // the queue's name, without the prefix
	// Reader holds the claim: an MCP session id, so that the task goes
	// back when the session ends, or a key the front door keeps for the
	// agent. Required.
	Reader  string
	Timeout time.Duration // how long to wait for a task; 0: DefaultWaitTimeout
	Lease   time.Duration // how long the claim lasts; 0: DefaultClaimLease
	// Progress, if set, is called about every ProgressEvery while waiting.
	Progress      func(waited time.Duration)
	ProgressEvery time.Duration
}

// Claim hands the claimant the queue's next task (highest priority, then
// oldest), blocking until one comes, the timeout passes (nil, nil) or ctx
// ends. The task stays leased to r.Reader until Complete or ReleaseTask, or
// until the reader goes away or the lease runs out: then it goes back to the
// queue, in its place, for the next claimant.
func (h *Hub) Claim(ctx context.Context, r ClaimRequest) (*Delivery, error) {
	const op = "claim task"
	if r.Agent == "" {
		return nil, Errorf(op, Invalid, "no agent identity: pass --agent, or the Parley-Agent header")
	}
	if r.Reader == "" {
		return nil, Errorf(op, Invalid, "no reader to hold the claim")
	}
	if err := ValidName("queue name", r.Queue); err != nil {
		return nil, withOp(op, err)
	}
	if r.Timeout <= 0 {
		r.Timeout = DefaultWaitTimeout
	}
	if r.Timeout > MaxWaitTimeout {
		return nil, Errorf(op, Invalid, "timeout %s is over the maximum %s", r.Timeout, MaxWaitTimeout)
	}
	if r.Lease == 0 {
		r.Lease = h.claims.lease
	}
	if r.Lease < MinClaimLease || r.Lease > MaxClaimLease {
		return nil, Errorf(op, Invalid, "lease %s is out of range: want %s to %s", r.Lease, MinClaimLease, MaxClaimLease)
	}
	if err := context.Cause(ctx); err != nil {
		return nil, withOp(op, err)
	}
	queue := QueuePrefix + r.Queue
	q := TakeQuery{Workspace: r.Workspace, Recipient: queue, Reader: r.Reader, MaxRank: Low.Rank(), Limit: 1, lease: r.Lease}
	d, err := h.block(ctx, inboxKey{r.Workspace, queue}, inboxKey{r.Workspace, r.Agent}, r.Timeout, r.Progress, r.ProgressEvery, q)
	if err != nil || d == nil {
		return nil, withOp(op, err)
	}
	h.publish(Event{Kind: EventTaskClaimed, Workspace: r.Workspace, Agent: r.Agent, MessageID: d.MessageID,
		Message: d.Message, Count: d.Count, Recipients: []string{queue}})
	return d, nil
}

// CompleteRequest ends a claim with the task done (or failed).
type CompleteRequest struct {
	Workspace string
	Agent     string // the claimant
	// Readers are the keys the claim may be held by (the caller's session,
	// the agent's own key); the first that holds it counts.
	Readers []string
	TaskID  string
	Result  string // for the sender; empty: a plain "done" or "failed"
	Failed  bool   // the claimant gave up on it: done, but not done well
	Door    Door   // the way the claimant came in (Origin.Door of the result)
	// IdempotencyKey, if set, names this completion: a retry with it (the
	// first one's answer was lost) returns the first result.
	IdempotencyKey string
}

// CompleteResult is a completed task and the reply that told its sender.
type CompleteResult struct {
	Task  *Message
	Queue string // the queue's address
	Reply *Message
	// Replayed says this was a retry with an idempotency key: the first
	// completion's result; nothing new happened.
	Replayed bool
}

// Complete marks a claimed task done and sends its sender the result, as a
// reply in the task's thread (so wait_for_reply on the task returns it), in
// one transaction.
// Only the holder of the claim completes it; a task whose claim ended (it
// went back to its queue) or that was completed already is a Conflict.
func (h *Hub) Complete(ctx context.Context, r CompleteRequest) (*CompleteResult, error) {
	const op = "complete task"
	if r.Agent == "" {
		return nil, Errorf(op, Invalid, "no agent identity: pass --agent, or the Parley-Agent header")
	}
	d, err := h.heldTask(ctx, op, r.Workspace, r.TaskID)
	if err != nil {
		return nil, err
	}
	task, err := h.store.Message(ctx, r.Workspace, r.TaskID)
	if err != nil {
		return nil, withOp(op, err)
	}
	if r.IdempotencyKey != "" {
		if err := ValidIdempotencyKey(r.IdempotencyKey); err != nil {
			return nil, withOp(op, err)
		}
		if first, err := h.replayComplete(ctx, r, task, d.Recipient); err != nil || first != nil {
			return first, withOp(op, err)
		}
	}
	kind, content := "task_completed", r.Result
	if r.Failed {
		kind = "task_failed"
	}
	if strings.TrimSpace(content) == "" {
		content = "Task " + task.ID + " done."
		if r.Failed {
			content = "Task " + task.ID + " failed."
		}
	}
	reply, err := h.newMessage(ctx, SendRequest{Workspace: r.Workspace, From: r.Agent, To: task.From, Content: content,
		ReplyTo: task.ID, Priority: string(task.Priority),
		Metadata: map[string]string{"kind": kind, "task_id": task.ID, "queue": d.Recipient}, Door: r.Door, task: task.ID,
		IdempotencyKey: r.IdempotencyKey})
	if err != nil {
		return nil, withOp(op, err)
	}
	recips, _, err := h.resolve(ctx, r.Workspace, task.From, r.Agent)
	if err != nil {
		return nil, withOp(op, err)
	}
	if len(recips) != 1 {
		return nil, Errorf(op, Internal, "the sender of task %s, %q, is %d recipients", task.ID, task.From, len(recips))
	}
	// Done and told in one transaction: a daemon killed in between leaves
	// the task claimed, for the claimant's retry, never done untold.
	held, err := h.store.CompleteTask(ctx, r.Readers, task.ID, reply, recips[0])
	if KindOf(err) == Conflict && r.IdempotencyKey != "" {
		// A retry raced the first completion, which won: its result.
		if first, ferr := h.replayComplete(ctx, r, task, d.Recipient); ferr == nil && first != nil {
			return first, nil
		}
	}
	if err != nil {
		return nil, withOp(op, err)
	}
	if len(held) == 0 {
		return nil, h.notHeld(ctx, op, r.Workspace, r.TaskID, d.Recipient)
	}
	h.publishDeliveries(EventMessageRead, held)
	h.publish(Event{Kind: EventTaskCompleted, Workspace: r.Workspace, Agent: r.Agent, MessageID: task.ID,
		Status: kind, Recipients: []string{d.Recipient}})
	h.wakeLocal(r.Workspace, recips)
	sent := SendEvents(reply, recips, nil)[0]
	if _, ok := h.store.(NotifyingStore); ok {
		h.publishLocal(sent) // the store told the other daemons
	} else {
		h.publish(sent)
	}
	h.Touch(ctx, r.Workspace, r.Agent)
	return &CompleteResult{Task: task, Queue: d.Recipient, Reply: reply}, nil
}

// replayComplete is the result of the first completion with r's key, or nil
// if there is none.
func (h *Hub) replayComplete(ctx context.Context, r CompleteRequest, task *Message, queue string) (*CompleteResult, error) {
	m, err := h.keyed(ctx, r.Workspace, r.Agent, r.IdempotencyKey)
	if err != nil || m == nil {
		return nil, err
	}
	if m.Origin.Task != task.ID {
		return nil, Errorf("", Conflict, "idempotency_key %q names message %s, which is not the result of task %s: a new completion takes a new key",
			r.IdempotencyKey, m.ID, task.ID)
	}
	return &CompleteResult{Task: task, Queue: queue, Reply: m, Replayed: true}, nil
}

// ReleaseTask gives a claimed task back to its queue, in its place, for the
// next claimant: the claimant cannot do it. It returns the queue's address.
func (h *Hub) ReleaseTask(ctx context.Context, ws string, readers []string, taskID string) (string, error) {
	const op = "release task"
	d, err := h.heldTask(ctx, op, ws, taskID)
	if err != nil {
		return "", err
	}
	for _, reader := range readers {
		if reader == "" {
			continue
		}
		n, err := h.release(ctx, ReleaseQuery{Reader: reader, MessageIDs: []string{taskID}})
		if err != nil {
			return "", withOp(op, err)
		}
		if n > 0 {
			return d.Recipient, nil
		}
	}
	return "", h.notHeld(ctx, op, ws, taskID, d.Recipient)
}

// heldTask finds the queue's copy of a task, or says why the id is not a task.
func (h *Hub) heldTask(ctx context.Context, op, ws, taskID string) (*Delivery, error) {
	if taskID == "" {
		return nil, Errorf(op, Invalid, "no task id")
	}
	ds, err := h.store.Deliveries(ctx, ws, taskID)
	if err != nil {
		if IsNotFound(err) {
			return nil, Errorf(op, NotFound, "no task %q in this workspace", taskID)
		}
		return nil, withOp(op, err)
	}
	for _, d := range ds {
		if IsQueue(d.Recipient) {
			return d, nil
		}
	}
	return nil, Errorf(op, Invalid, "message %s is not a task: it was not sent to a queue:NAME", taskID)
}

// notHeld explains why the caller does not hold the task.
func (h *Hub) notHeld(ctx context.Context, op, ws, taskID, queue string) error {
	ds, err := h.store.Deliveries(ctx, ws, taskID)
	if err != nil {
		return withOp(op, err)
	}
	for _, d := range ds {
		if d.Recipient != queue {
			continue
		}
		switch d.State {
		case Read, Acked:
			return Errorf(op, Conflict, "task %s is completed already", taskID)
		case Delivered:
			if why := h.fence.lostWhy(); why != "" {
				return Errorf(op, Conflict, "you do not hold task %s: %s, and another claimant holds it now (until %s): do not finish it twice",
					taskID, why, d.LeaseUntil.UTC().Format(time.RFC3339))
			}
			return Errorf(op, Conflict, "task %s is claimed by another claimant (until %s)", taskID, d.LeaseUntil.UTC().Format(time.RFC3339))
		}
	}
	if why := h.fence.lostWhy(); why != "" {
		return Errorf(op, Conflict, "you do not hold task %s: %s, and it went back to %s; another claimant may be doing it. Claim it again if it is still open", taskID, why, queue)
	}
	return Errorf(op, Conflict, "you do not hold task %s: its claim ended (the claimant's session closed, or nothing renewed its lease in time: parley queue renew) and it went back to %s; claim it again", taskID, queue)
}
