package ops

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// Work queues (issue 15): send_message to queue:NAME, claim_task,
// complete_task, release_task.

// claimReaders are the keys a claim of the caller may be held by: its
// reader's and its agent's (hub.Reader.ClaimKey).
func (c *Caller) claimReaders() []string {
	agent := hub.AgentClaimKey(c.Workspace, c.Agent)
	if k := c.Reader.ClaimKey(c.Workspace, c.Agent); k != agent {
		return []string{k, agent}
	}
	return []string{agent}
}

// queueName accepts a queue as NAME or queue:NAME.
func queueName(q string) string { return strings.TrimPrefix(strings.TrimSpace(q), hub.QueuePrefix) }

// ClaimTask takes the next task of a queue for the caller, waiting up to the
// timeout for one. The task is the caller's until it completes or releases
// it, its session ends, or the lease runs out.
func (o *Ops) ClaimTask(ctx context.Context, c *Caller, in api.ClaimTaskRequest) (api.ClaimTaskResult, error) {
	const op = "claim_task"
	timeout, err := secondsArg(op, in.Timeout, hub.DefaultWaitTimeout, hub.MaxWaitTimeout)
	if err != nil {
		return api.ClaimTaskResult{}, err
	}
	if in.LeaseSeconds < 0 {
		return api.ClaimTaskResult{}, hub.Errorf(op, hub.Invalid, "lease_seconds must not be negative")
	}
	if err := c.needAgent(op); err != nil {
		return api.ClaimTaskResult{}, err
	}
	rd, err := o.reader(c)
	if err != nil {
		return api.ClaimTaskResult{}, err
	}
	queue := queueName(in.Queue)
	start := time.Now()
	r := hub.ClaimRequest{Workspace: c.Workspace, Agent: c.Agent, Queue: queue, Reader: rd.ClaimKey(c.Workspace, c.Agent),
		Timeout: timeout, Lease: time.Duration(in.LeaseSeconds) * time.Second}
	if p := o.keepAlive(c, timeout, func(waited time.Duration) string {
		return fmt.Sprintf("waiting for a task in queue:%s (%ds of %ds)", queue, int(waited.Seconds()), int(timeout.Seconds()))
	}); p != nil {
		r.Progress, r.ProgressEvery = p, o.progressEvery
	}
	d, err := o.hub.Claim(ctx, r)
	if err != nil {
		return api.ClaimTaskResult{}, err
	}
	out := api.ClaimTaskResult{Status: "timeout", WaitedSeconds: int(time.Since(start).Seconds())}
	if d != nil {
		rd.Claimed(d.MessageID)
		out.Status = "claimed"
		out.Task = &api.TaskInfo{MessageInfo: Delivered(d), Queue: d.Recipient, LeaseUntil: api.FormatTime(d.LeaseUntil)}
	}
	return out, nil
}

// CompleteTask ends the caller's claim on a task and sends the result to the
// task's sender, as a reply in its thread.
func (o *Ops) CompleteTask(ctx context.Context, c *Caller, in api.CompleteTaskRequest) (api.CompleteTaskResult, error) {
	const op = "complete_task"
	if err := c.needAgent(op); err != nil {
		return api.CompleteTaskResult{}, err
	}
	res, err := o.hub.Complete(ctx, hub.CompleteRequest{Workspace: c.Workspace, Agent: c.Agent, Readers: c.claimReaders(),
		TaskID: in.TaskID, Result: in.Result, Failed: in.Failed, Door: c.Door, IdempotencyKey: in.IdempotencyKey})
	if err != nil {
		return api.CompleteTaskResult{}, err
	}
	out := api.CompleteTaskResult{Status: "completed", TaskRef: api.TaskRef{TaskID: res.Task.ID, Queue: res.Queue}, ReplyID: res.Reply.ID, Replayed: res.Replayed}
	if res.Reply.Metadata["kind"] == "task_failed" {
		out.Status = "failed"
	}
	return out, nil
}

// ReleaseTask gives a task the caller claimed back to its queue, in its
// place, for another claimant.
func (o *Ops) ReleaseTask(ctx context.Context, c *Caller, in api.ReleaseTaskRequest) (api.ReleaseTaskResult, error) {
	const op = "release_task"
	if err := c.needAgent(op); err != nil {
		return api.ReleaseTaskResult{}, err
	}
	queue, err := o.hub.ReleaseTask(ctx, c.Workspace, c.claimReaders(), in.TaskID)
	if err != nil {
		return api.ReleaseTaskResult{}, err
	}
	return api.ReleaseTaskResult{Status: "released", TaskRef: api.TaskRef{TaskID: in.TaskID, Queue: queue}}, nil
}

// RenewTask extends the caller's claim on a task: its heartbeat, for a
// claimant without a session whose liveness renews it (the CLI).
func (o *Ops) RenewTask(ctx context.Context, c *Caller, in api.RenewTaskRequest) (api.RenewTaskResult, error) {
	const op = "renew_task"
	if err := c.needAgent(op); err != nil {
		return api.RenewTaskResult{}, err
	}
	if in.LeaseSeconds < 0 {
		return api.RenewTaskResult{}, hub.Errorf(op, hub.Invalid, "lease_seconds must not be negative")
	}
	d, err := o.hub.RenewTask(ctx, c.Workspace, c.claimReaders(), in.TaskID, time.Duration(in.LeaseSeconds)*time.Second)
	if err != nil {
		return api.RenewTaskResult{}, err
	}
	return api.RenewTaskResult{Status: "renewed", TaskRef: api.TaskRef{TaskID: d.MessageID, Queue: d.Recipient}, LeaseUntil: api.FormatTime(d.LeaseUntil)}, nil
}

// Queue lists the tasks waiting in a queue, next first, without claiming them.
func (o *Ops) Queue(ctx context.Context, c *Caller, in api.QueueRequest) (api.QueueResult, error) {
	const op = "queue"
	if err := limitArg(op, "limit", in.Limit); err != nil {
		return api.QueueResult{}, err
	}
	name := queueName(in.Queue)
	if err := hub.ValidName("queue name", name); err != nil {
		return api.QueueResult{}, err
	}
	addr := hub.QueuePrefix + name
	ds, n, err := o.hub.Inbox(ctx, c.Workspace, addr, in.Limit)
	if err != nil {
		return api.QueueResult{}, err
	}
	out := api.QueueResult{Queue: addr, Waiting: n, Tasks: make([]api.MessageInfo, len(ds))}
	for i, d := range ds {
		out.Tasks[i] = Delivered(d)
	}
	return out, nil
}
