package profile_test

import (
	"encoding/json"
	"testing"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/ops"
)

// TestQueueTools walks a work queue through both doors: two tasks sent to
// queue:builds wait in GET /queues/builds; claim_task takes the first,
// release_task puts it back in its place, and complete_task sends the
// result to the task's sender as a reply in its thread.
func TestQueueTools(t *testing.T) {
	e := newEnv(t)
	boss := e.Session(ops.Caller{Workspace: "w", Agent: "boss"}, nil)
	worker := e.Session(ops.Caller{Workspace: "w", Agent: "worker"}, nil)
	var ids []string
	for _, c := range []string{"build a", "build b"} {
		var r api.SendResult
		mustCall(t, boss, "send_message", map[string]any{"to": "queue:builds", "content": c}, &r)
		ids = append(ids, r.MessageID)
	}
	queue := func() api.QueueResult {
		t.Helper()
		code, body := e.Do("GET", "/queues/builds", "w", "", nil)
		var q api.QueueResult
		if code != 200 || json.Unmarshal(body, &q) != nil {
			t.Fatalf("GET /queues/builds: %d %s", code, body)
		}
		return q
	}
	if q := queue(); q.Waiting != 2 || len(q.Tasks) != 2 || q.Tasks[0].MessageID != ids[0] {
		t.Fatalf("queue before claims: got %+v, want both tasks, %s first", q, ids[0])
	}

	claim := func() api.ClaimTaskResult {
		t.Helper()
		var c api.ClaimTaskResult
		mustCall(t, worker, "claim_task", map[string]any{"queue": "builds", "timeout": 5, "lease_seconds": 60}, &c)
		return c
	}
	c := claim()
	if c.Status != "claimed" || c.Task == nil || c.Task.MessageID != ids[0] || c.Task.Queue != "queue:builds" || c.Task.LeaseUntil == "" {
		t.Fatalf("claim_task: got %+v (task %+v), want %s claimed with a lease", c, c.Task, ids[0])
	}
	if q := queue(); q.Waiting != 1 || q.Tasks[0].MessageID != ids[1] {
		t.Errorf("queue with a task claimed: got %+v, want %s alone", q, ids[1])
	}
	var rel api.ReleaseTaskResult
	mustCall(t, worker, "release_task", map[string]any{"task_id": ids[0]}, &rel)
	if rel.Status != "released" || rel.Queue != "queue:builds" {
		t.Errorf("release_task: got %+v", rel)
	}
	if c := claim(); c.Task == nil || c.Task.MessageID != ids[0] {
		t.Fatalf("claim after the release: got %+v, want %s again, in its place", c, ids[0])
	}
	var done api.CompleteTaskResult
	mustCall(t, worker, "complete_task", map[string]any{"task_id": ids[0], "result": "green"}, &done)
	if done.Status != "completed" || done.TaskID != ids[0] || done.ReplyID == "" {
		t.Errorf("complete_task: got %+v", done)
	}
	if msg := toolError(t, worker, "complete_task", map[string]any{"task_id": ids[0], "result": "again"}); msg == "" {
		t.Error("completing a task twice: got an empty error")
	}
	var inbox api.CheckResult
	mustCall(t, boss, "check_messages", nil, &inbox)
	if len(inbox.Messages) != 1 || inbox.Messages[0].MessageID != done.ReplyID || inbox.Messages[0].ReplyTo != ids[0] {
		t.Errorf("boss's inbox: got %+v, want the result as a reply to %s", inbox.Messages, ids[0])
	}
	if q := queue(); q.Waiting != 1 || q.Tasks[0].MessageID != ids[1] {
		t.Errorf("queue at the end: got %+v, want %s alone", q, ids[1])
	}
}
