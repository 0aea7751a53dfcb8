//go:build unix

package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/store/postgres/pgtest"
)

// TestPostgresPausedDaemonRefusesReclaimedWork: daemon A, through which a
// task was claimed, is paused (SIGSTOP) past daemon_timeout while the store
// stays up; B takes it for dead and gives the task to another claimant.
// Once A runs again it learns so on its next beat: its MCP session is told
// at once (pushed, and in its next tool result), and the first claimant's
// complete through A is refused with that reason, exit 5, so the task is
// not finished twice. About 4 s: A must stay paused for a bound (2 s) and
// B must notice.
func TestPostgresPausedDaemonRefusesReclaimedWork(t *testing.T) {
	a, b := taskPair(t, pgtest.Database(t), "build release 1.4")
	ctx := t.Context()
	var first api.ClaimTaskResult
	a.MustJSON(&first, "queue", "claim", "builds", "--agent", "worker", "--timeout", "10s")
	if first.Task == nil {
		t.Fatalf("worker's claim through A: %+v, want the task", first)
	}
	sess, pushed := noticeSession(t, ctx, a, "worker")

	pid := a.daemonPID()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	defer resume()
	secs := 20
	second, err := pgClient(t, b, "other").ClaimTask(ctx, api.ClaimTaskRequest{Queue: "builds", Timeout: &secs})
	if err != nil || second.Task == nil || second.Task.MessageID != first.Task.MessageID || !second.Task.Redelivered {
		t.Fatalf("a claim through B while A is paused: %+v, %v; want task %s again, redelivered", second.Task, err, first.Task.MessageID)
	}
	resume()

	const why = "took it for dead"
	var heard []string
	waitFor(t, 15*time.Second, "A's session told that A was taken for dead", func() (bool, string) {
		for len(pushed) > 0 {
			heard = append(heard, <-pushed)
		}
		return strings.Contains(strings.Join(heard, "\n"), why), strings.Join(heard, " | ")
	})
	notes := fmt.Sprint(call(t, sess, "whoami", nil, nil).Meta["parley/notices"])
	if !strings.Contains(notes, why) || !strings.Contains(notes, "Claim and reserve again") {
		t.Errorf("worker's next tool result after the reclaim carries notices %s, want one saying A was taken for dead", notes)
	}
	if out, errOut, code := a.Run("queue", "complete", first.Task.MessageID, "--agent", "worker", "--result", "built by worker"); code != 5 ||
		!strings.Contains(errOut, why) || !strings.Contains(errOut, "do not finish it twice") {
		t.Errorf("worker completes through A the task that went to another claimant: exit %d, %s%s; want 5 and the reason", code, out, errOut)
	}
	if res, err := pgClient(t, b, "other").CompleteTask(ctx, api.CompleteTaskRequest{TaskID: first.Task.MessageID, Result: "built by other"}); err != nil || res.Status != "completed" {
		t.Errorf("other completes through B: %+v, %v", res, err)
	}
}
