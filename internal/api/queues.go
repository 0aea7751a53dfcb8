package api

// Wire types of work queues (issue 15): a message sent to queue:NAME goes to
// exactly one claimant.

// ClaimTaskRequest is claim_task and POST /api/v1/queues/{queue}/claim.
type ClaimTaskRequest struct {
	Queue        string `json:"queue" jsonschema:"NAME of queue:NAME"`
	Timeout      *int   `json:"timeout,omitempty" jsonschema:"seconds to wait (default 300, max 600)"`
	LeaseSeconds int    `json:"lease_seconds,omitempty" jsonschema:"seconds the claim lasts unless your live session renews it (default 120)"`
}

// TaskInfo is a claimed task: the message sent to the queue, and the claim.
type TaskInfo struct {
	MessageInfo
	Queue      string `json:"queue"`
	LeaseUntil string `json:"lease_until" jsonschema:"when the task goes back to the queue unless completed or released"`
}

// ClaimTaskResult is the claim_task result.
type ClaimTaskResult struct {
	Status        string    `json:"status" jsonschema:"claimed or timeout"`
	Task          *TaskInfo `json:"task,omitempty"`
	WaitedSeconds int       `json:"waited_seconds"`
}

// CompleteTaskRequest is complete_task and POST /api/v1/tasks/{task_id}/complete.
type CompleteTaskRequest struct {
	TaskID string `json:"task_id" jsonschema:"the task's message_id"`
	Result string `json:"result,omitempty" jsonschema:"what came of it"`
	Failed bool   `json:"failed,omitempty" jsonschema:"you could not do it"`
	// IdempotencyKey names this completion: a retry with it (within 24 h)
	// returns the first result instead of "completed already".
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"your name for this completion: a retry with it returns the first result"`
}

// TaskRef names the task a result is about, and its queue.
type TaskRef struct {
	TaskID string `json:"task_id"`
	Queue  string `json:"queue"`
}

// CompleteTaskResult is the complete_task result.
type CompleteTaskResult struct {
	Status string `json:"status" jsonschema:"completed or failed"`
	TaskRef
	ReplyID string `json:"reply_id" jsonschema:"the reply that told the sender"`
	// Replayed says this answers a retry with an idempotency key.
	Replayed bool `json:"replayed,omitempty"`
}

// ReleaseTaskRequest is release_task and POST /api/v1/tasks/{task_id}/release.
type ReleaseTaskRequest struct {
	TaskID string `json:"task_id" jsonschema:"the task's message_id"`
}

// ReleaseTaskResult is the release_task result.
type ReleaseTaskResult struct {
	Status string `json:"status" jsonschema:"released"`
	TaskRef
}

// RenewTaskRequest is POST /api/v1/tasks/{task_id}/renew: the claimant is
// alive and still at it (parley queue renew).
type RenewTaskRequest struct {
	TaskID       string `json:"task_id" jsonschema:"the task's message_id"`
	LeaseSeconds int    `json:"lease_seconds,omitempty" jsonschema:"seconds from now the claim lasts (default the daemon's claim_lease, 120)"`
}

// RenewTaskResult is the renewed claim.
type RenewTaskResult struct {
	Status string `json:"status" jsonschema:"renewed"`
	TaskRef
	LeaseUntil string `json:"lease_until"`
}

// QueueRequest is GET /api/v1/queues/{queue}: the tasks waiting in a queue.
type QueueRequest struct {
	Queue string `json:"queue"`
	Limit int    `json:"limit,omitempty"`
}

// QueueResult lists a queue's waiting tasks, next first, and counts them.
type QueueResult struct {
	Queue   string        `json:"queue"`
	Waiting int           `json:"waiting"`
	Tasks   []MessageInfo `json:"tasks"`
}
