package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// claimed is the part of a claim_task result the tests read.
type claimed struct {
	Status string `json:"status"`
	Task   *struct {
		MessageID     string `json:"message_id"`
		Content       string `json:"content"`
		Queue         string `json:"queue"`
		DeliveryCount int    `json:"delivery_count"`
	} `json:"task"`
}

// TestQueueEightClaimants: eight agents, each through its own `parley mcp
// serve`, race for the tasks of one queue; each task goes to exactly one of
// them, and every completion reaches the sender as a reply.
func TestQueueEightClaimants(t *testing.T) {
	const tasks, claimants = 40, 8
	e := newEnv(t)
	const ws = "q8"
	boss := e.Session(nil, "--agent", "boss", "--workspace", ws)
	sent := map[string]bool{}
	for i := range tasks {
		var out struct {
			MessageID       string   `json:"message_id"`
			Recipients      []string `json:"recipients"`
			RecipientStatus string   `json:"recipient_status"`
		}
		mustCall(t, boss, "send_message", map[string]any{"to": "queue:build", "content": fmt.Sprintf("task %d", i)}, &out)
		if !slices.Equal(out.Recipients, []string{"queue:build"}) || out.RecipientStatus != "queue" {
			t.Fatalf("send to queue:build went to %v (%s)", out.Recipients, out.RecipientStatus)
		}
		sent[out.MessageID] = true
	}
	sessions := make([]*mcp.ClientSession, claimants)
	for i := range sessions {
		sessions[i] = e.Session(nil, "--agent", fmt.Sprintf("w%d", i), "--workspace", ws)
	}
	var (
		mu   sync.Mutex
		by   = map[string]int{} // task -> claimant
		dups []string
		wg   sync.WaitGroup
	)
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var c claimed
				res := call(t, s, "claim_task", map[string]any{"queue": "build", "timeout": 2}, &c)
				if res.IsError {
					t.Errorf("w%d claim_task: %s", i, text(res))
					return
				}
				if c.Task == nil {
					return
				}
				mu.Lock()
				if prev, ok := by[c.Task.MessageID]; ok {
					dups = append(dups, fmt.Sprintf("%s by w%d and w%d", c.Task.MessageID, prev, i))
				}
				by[c.Task.MessageID] = i
				mu.Unlock()
				if res := call(t, s, "complete_task", map[string]any{"task_id": c.Task.MessageID, "result": "built by w" + fmt.Sprint(i)}, nil); res.IsError {
					t.Errorf("w%d complete_task: %s", i, text(res))
				}
			}
		}()
	}
	wg.Wait()
	if len(dups) > 0 {
		t.Fatalf("tasks claimed twice: %v", dups)
	}
	for id := range sent {
		if _, ok := by[id]; !ok {
			t.Errorf("task %s was never claimed", id)
		}
	}
	per := make([]int, claimants)
	for _, i := range by {
		per[i]++
	}
	var replies struct {
		Messages []struct {
			ReplyTo  string            `json:"reply_to"`
			Metadata map[string]string `json:"metadata"`
		} `json:"messages"`
	}
	mustCall(t, boss, "check_messages", map[string]any{"limit": 100}, &replies)
	done := map[string]bool{}
	for _, m := range replies.Messages {
		if m.Metadata["kind"] == "task_completed" && sent[m.ReplyTo] {
			done[m.ReplyTo] = true
		}
	}
	if len(done) != tasks || len(replies.Messages) != tasks {
		t.Errorf("boss got %d replies for %d distinct tasks, want %d", len(replies.Messages), len(done), tasks)
	}
	t.Logf("%d tasks, %d claimants, each claimed once; per claimant %v", tasks, claimants, per)
}

// TestQueueClaimantKill9: a claimant's `parley mcp serve` killed with SIGKILL
// while it holds a task with a long lease gives the task back at once: the
// next claimant gets it (marked as handed out before), long before the
// lease would have run out.
func TestQueueClaimantKill9(t *testing.T) {
	e := newEnv(t)
	const ws = "qkill"
	boss := e.Session(nil, "--agent", "boss", "--workspace", ws)
	var sent struct {
		MessageID string `json:"message_id"`
	}
	mustCall(t, boss, "send_message", map[string]any{"to": "queue:deploy", "content": "deploy v2"}, &sent)

	cmd := exec.Command(bin, "mcp", "serve", "--agent", "doomed", "--workspace", ws)
	cmd.Env = e.environ()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "doomed", Version: "1"}, nil)
	doomed, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer doomed.Close()
	var first claimed
	mustCall(t, doomed, "claim_task", map[string]any{"queue": "deploy", "timeout": 5, "lease_seconds": 3600}, &first)
	if first.Task == nil || first.Task.MessageID != sent.MessageID {
		t.Fatalf("first claim: %+v; want the task", first)
	}
	// While the claim lives, nobody else gets the task.
	next := e.Session(nil, "--agent", "next", "--workspace", ws)
	var none claimed
	mustCall(t, next, "claim_task", map[string]any{"queue": "deploy", "timeout": 1}, &none)
	if none.Task != nil {
		t.Fatalf("a held task was claimed again: %+v", none.Task)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var again claimed
	mustCall(t, next, "claim_task", map[string]any{"queue": "deploy", "timeout": 60}, &again)
	if again.Task == nil || again.Task.MessageID != sent.MessageID || again.Task.DeliveryCount != 2 {
		t.Fatalf("claim after kill -9: %+v; want the task again, delivery_count 2", again.Task)
	}
	t.Logf("task back to the next claimant %s after kill -9 of the claimant (lease was 1h)", time.Since(start).Round(time.Millisecond))
	var done struct {
		Status string `json:"status"`
	}
	mustCall(t, next, "complete_task", map[string]any{"task_id": sent.MessageID, "result": "deployed"}, &done)
	var reply struct {
		Status  string `json:"status"`
		Message *struct {
			From    string `json:"from"`
			Content string `json:"content"`
			ReplyTo string `json:"reply_to"`
		} `json:"message"`
	}
	mustCall(t, boss, "wait_for_reply", map[string]any{"message_id": sent.MessageID, "timeout": 10}, &reply)
	if reply.Message == nil || reply.Message.From != "next" || reply.Message.Content != "deployed" {
		t.Errorf("boss's reply: %+v; want next's result", reply.Message)
	}
}

// TestQueueCLI drives a queue from the CLI: send, list, claim, complete,
// release, and the errors a person meets.
func TestQueueCLI(t *testing.T) {
	e := newEnv(t)
	w := []string{"--workspace", "qcli"}
	e.Must(append([]string{"send", "queue:review", "review PR 7", "--agent", "boss"}, w...)...)
	e.Must(append([]string{"send", "queue:review", "review PR 8", "--agent", "boss", "--priority", "high"}, w...)...)
	out := e.Must(append([]string{"queue", "review"}, w...)...)
	if !strings.Contains(out, "queue:review: 2 waiting") || strings.Index(out, "PR 8") > strings.Index(out, "PR 7") {
		t.Errorf("parley queue review:\n%s\nwant 2 waiting, PR 8 (high) first", out)
	}
	var c struct {
		Task struct {
			MessageID string `json:"message_id"`
			Content   string `json:"content"`
		} `json:"task"`
	}
	e.MustJSON(&c, append([]string{"queue", "claim", "review", "--agent", "rita", "--timeout", "5s", "--json"}, w...)...)
	if c.Task.Content != "review PR 8" {
		t.Fatalf("claimed %+v; want PR 8 first", c.Task)
	}
	// Someone else cannot complete it; the claimant can, from another command.
	if _, errs, code := e.Run(append([]string{"queue", "complete", c.Task.MessageID, "--agent", "sam"}, w...)...); code == 0 || !strings.Contains(errs, "claimed by another") {
		t.Errorf("sam completes rita's task: exit %d %q; want refused", code, errs)
	}
	out = e.Must(append([]string{"queue", "complete", c.Task.MessageID, "--agent", "rita", "--result", "LGTM"}, w...)...)
	if !strings.Contains(out, "completed") {
		t.Errorf("complete: %q", out)
	}
	out = e.Must(append([]string{"wait", "--agent", "boss", "--reply-to", c.Task.MessageID, "--timeout", "5s"}, w...)...)
	if !strings.Contains(out, "LGTM") || !strings.Contains(out, "from rita") {
		t.Errorf("boss's reply:\n%s", out)
	}
	// Claim the other and give it back: it is waiting again.
	e.MustJSON(&c, append([]string{"queue", "claim", "review", "--agent", "rita", "--timeout", "5s", "--json"}, w...)...)
	e.Must(append([]string{"queue", "release", c.Task.MessageID, "--agent", "rita"}, w...)...)
	if out := e.Must(append([]string{"queue", "review"}, w...)...); !strings.Contains(out, "1 waiting") {
		t.Errorf("after release:\n%s\nwant 1 waiting", out)
	}
	if out, _, code := e.Run(append([]string{"queue", "claim", "empty", "--agent", "rita", "--timeout", "1s"}, w...)...); code != 3 || !strings.Contains(out, "no task within 1s") {
		t.Errorf("claim from an empty queue: exit %d, %q; want 3 (timeout) and no task within 1s", code, out)
	}
	if _, errs, code := e.Run(append([]string{"queue", "claim", "empty", "--agent", "rita", "--timeout", "11m"}, w...)...); code == 0 || !strings.Contains(errs, "out of range") {
		t.Errorf("claim with an 11m timeout: exit %d, %q; want refused as out of range", code, errs)
	}
}
