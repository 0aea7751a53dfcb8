package storetest

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// runQueues runs the work-queue contract: a hub over the store hands each
// task of a queue:NAME to exactly one claimant and takes it back when the
// claim ends unfinished. Queues are built on the store's deliveries, so this
// is the store's Take, Confirm and Release as a queue uses them.
func runQueues(t *testing.T, open func(t *testing.T) hub.Store) {
	suite(t, open, newQueueFixture, []test[*queueFixture]{
		{"ExactlyOnceEightClaimants", testQueueExactlyOnce},
		{"PriorityThenAge", testQueueOrder},
		{"ClaimBlocksUntilSent", testQueueBlocks},
		{"CompleteTellsSender", testQueueComplete},
		{"ReaderGoneReturnsTask", testQueueReaderGone},
		{"LeaseExpiryReturnsTask", testQueueLeaseExpiry},
		{"ReleaseTask", testQueueRelease},
		{"NotATask", testQueueNotATask},
		{"OpenTasks", testQueueOpenTasks},
		{"RenewExtendsClaim", testQueueRenew},
		{"LiveHolderKeepsClaim", testQueueLiveHolder},
	})
}

func newQueueFixture(_ *testing.T, s hub.Store) *queueFixture {
	f := &queueFixture{now: t0}
	f.h = hub.New(s, &hub.Options{Now: f.clock})
	return f
}

type queueFixture struct {
	h   *hub.Hub
	mu  sync.Mutex
	now time.Time
}

func (f *queueFixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *queueFixture) advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

const qws = "qws"

func (f *queueFixture) send(t *testing.T, from, to, content string, p hub.Priority) *hub.Message {
	t.Helper()
	res, err := f.h.Send(ctx(t), hub.SendRequest{Workspace: qws, From: from, To: to, Content: content, Priority: string(p)})
	if err != nil {
		t.Fatalf("send to %s: %v", to, err)
	}
	if !slices.Equal(res.Recipients, []string{to}) {
		t.Fatalf("send to %s: recipients %v, want just the queue", to, res.Recipients)
	}
	f.advance(time.Millisecond) // distinct ids in order
	return res.Message
}

// claim claims at once (a task is expected to be there, or none).
func (f *queueFixture) claim(t *testing.T, agent, reader, queue string, lease time.Duration) *hub.Delivery {
	t.Helper()
	d, err := f.h.Claim(ctx(t), hub.ClaimRequest{Workspace: qws, Agent: agent, Queue: queue, Reader: reader,
		Timeout: 10 * time.Millisecond, Lease: lease})
	if err != nil {
		t.Fatalf("claim %s as %s: %v", queue, agent, err)
	}
	return d
}

func testQueueExactlyOnce(t *testing.T, f *queueFixture) {
	const tasks, claimants = 48, 8
	sent := map[string]bool{}
	for i := range tasks {
		sent[f.send(t, "boss", "queue:build", fmt.Sprintf("task %d", i), hub.Normal).ID] = true
	}
	var (
		mu      sync.Mutex
		claimed = map[string]string{} // task -> claimant
		dups    []string
		wg      sync.WaitGroup
	)
	for c := range claimants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			agent := fmt.Sprintf("w%d", c)
			for {
				d, err := f.h.Claim(ctx(t), hub.ClaimRequest{Workspace: qws, Agent: agent, Queue: "build",
					Reader: "session-" + agent, Timeout: 20 * time.Millisecond})
				if err != nil {
					t.Errorf("claim as %s: %v", agent, err)
					return
				}
				if d == nil {
					return // the queue is empty
				}
				mu.Lock()
				if prev, ok := claimed[d.MessageID]; ok {
					dups = append(dups, fmt.Sprintf("%s by %s and %s", d.MessageID, prev, agent))
				}
				claimed[d.MessageID] = agent
				mu.Unlock()
				if _, err := f.h.Complete(ctx(t), hub.CompleteRequest{Workspace: qws, Agent: agent,
					Readers: []string{"session-" + agent}, TaskID: d.MessageID, Result: "ok"}); err != nil {
					t.Errorf("complete %s as %s: %v", d.MessageID, agent, err)
				}
			}
		}()
	}
	wg.Wait()
	if len(dups) > 0 {
		t.Fatalf("tasks claimed twice: %v", dups)
	}
	if len(claimed) != tasks {
		t.Fatalf("claimed %d tasks, want %d", len(claimed), tasks)
	}
	for id := range sent {
		if claimed[id] == "" {
			t.Errorf("task %s was never claimed", id)
		}
	}
	// Every completion told the sender, once.
	replies, _, err := f.h.Check(ctx(t), qws, "boss", hub.MaxCheckLimit)
	if err != nil {
		t.Fatal(err)
	}
	if len(replies) != tasks {
		t.Errorf("boss got %d completion replies, want %d", len(replies), tasks)
	}
}

func testQueueOrder(t *testing.T, f *queueFixture) {
	low := f.send(t, "boss", "queue:q", "low", hub.Low)
	n1 := f.send(t, "boss", "queue:q", "normal 1", hub.Normal)
	crit := f.send(t, "boss", "queue:q", "critical", hub.Critical)
	n2 := f.send(t, "boss", "queue:q", "normal 2", hub.Normal)
	other := f.send(t, "boss", "queue:other", "elsewhere", hub.Critical)
	var got []string
	for range 4 {
		got = append(got, f.claim(t, "w", "r", "q", 0).MessageID)
	}
	if want := []string{crit.ID, n1.ID, n2.ID, low.ID}; !slices.Equal(got, want) {
		t.Errorf("claim order %v, want %v (priority, then oldest)", got, want)
	}
	if d := f.claim(t, "w", "r", "q", 0); d != nil {
		t.Errorf("claimed %s from an empty queue", d.MessageID)
	}
	if d := f.claim(t, "w", "r", "other", 0); d == nil || d.MessageID != other.ID {
		t.Errorf("queue:other gave %v, want %s", d, other.ID)
	}
}

func testQueueBlocks(t *testing.T, f *queueFixture) {
	type result struct {
		d   *hub.Delivery
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := f.h.Claim(ctx(t), hub.ClaimRequest{Workspace: qws, Agent: "w", Queue: "jobs", Reader: "r", Timeout: time.Minute})
		done <- result{d, err}
	}()
	waitFor(t, "the claim to block", func() bool { return f.h.Waiters(qws, "queue:jobs") == 1 })
	if !f.h.Connected(qws, "w") {
		t.Error("a blocked claimant does not count as present")
	}
	m := f.send(t, "boss", "queue:jobs", "build it", hub.Normal)
	r := <-done
	if r.err != nil || r.d == nil || r.d.MessageID != m.ID || r.d.Message.Content != "build it" {
		t.Fatalf("blocked claim got %+v, %v; want the task %s", r.d, r.err, m.ID)
	}
	if r.d.State != hub.Delivered || r.d.Reader != "r" {
		t.Errorf("claimed task is %s held by %q, want delivered to r", r.d.State, r.d.Reader)
	}
}

func testQueueComplete(t *testing.T, f *queueFixture) {
	var mu sync.Mutex
	var events []string
	cancel := f.h.Subscribe(func(e hub.Event) {
		if e.Kind == hub.EventTaskClaimed || e.Kind == hub.EventTaskCompleted {
			mu.Lock()
			events = append(events, fmt.Sprintf("%s %s %s %v", e.Kind, e.Agent, e.Status, e.Recipients))
			mu.Unlock()
		}
	})
	defer cancel()
	task := f.send(t, "boss", "queue:review", "review PR 7", hub.High)
	d := f.claim(t, "w", "sess-w", "review", 0)
	if d == nil {
		t.Fatal("no task")
	}
	// Someone who does not hold it cannot complete it.
	_, err := f.h.Complete(ctx(t), hub.CompleteRequest{Workspace: qws, Agent: "x", Readers: []string{"sess-x"}, TaskID: task.ID})
	wantKind(t, "complete by a non-holder", err, hub.Conflict)
	res, err := f.h.Complete(ctx(t), hub.CompleteRequest{Workspace: qws, Agent: "w",
		Readers: []string{"", "agent-key", "sess-w"}, TaskID: task.ID, Result: "LGTM"})
	if err != nil {
		t.Fatalf("complete: %v", err)
	}
	if res.Queue != "queue:review" || res.Reply == nil || res.Reply.ReplyTo != task.ID || res.Reply.ThreadID != task.ID {
		t.Fatalf("complete result %+v: want a reply in the task's thread", res)
	}
	reply, _, err := f.h.Check(ctx(t), qws, "boss", 10)
	if err != nil || len(reply) != 1 {
		t.Fatalf("boss's inbox: %v, %v; want the completion", reply, err)
	}
	r := reply[0]
	if r.From != "w" || r.Content != "LGTM" || r.Metadata["kind"] != "task_completed" || r.Metadata["task_id"] != task.ID ||
		r.Metadata["queue"] != "queue:review" || r.Priority != hub.High {
		t.Errorf("completion reply %+v", r)
	}
	_, err = f.h.Complete(ctx(t), hub.CompleteRequest{Workspace: qws, Agent: "w", Readers: []string{"sess-w"}, TaskID: task.ID})
	wantKind(t, "complete twice", err, hub.Conflict)
	mu.Lock()
	want := []string{"task.claimed w  [queue:review]", "task.completed w task_completed [queue:review]"}
	if !slices.Equal(events, want) {
		t.Errorf("task events %q, want %q", events, want)
	}
	mu.Unlock()
	ds, err := f.h.Store().Deliveries(ctx(t), qws, task.ID)
	if err != nil || len(ds) != 1 || ds[0].State != hub.Read {
		t.Errorf("the queue's copy after completion: %+v, %v; want read", ds, err)
	}
	// A failed task is done too, and says so.
	task2 := f.send(t, "boss", "queue:review", "review PR 8", hub.Normal)
	f.claim(t, "w", "sess-w", "review", 0)
	if _, err := f.h.Complete(ctx(t), hub.CompleteRequest{Workspace: qws, Agent: "w", Readers: []string{"sess-w"}, TaskID: task2.ID, Failed: true}); err != nil {
		t.Fatal(err)
	}
	reply, _, _ = f.h.Check(ctx(t), qws, "boss", 10)
	if len(reply) != 1 || reply[0].Metadata["kind"] != "task_failed" || reply[0].Content == "" {
		t.Errorf("failure reply %+v", reply)
	}
}

func testQueueReaderGone(t *testing.T, f *queueFixture) {
	var released atomic.Int32
	cancel := f.h.Subscribe(func(e hub.Event) {
		if e.Kind == hub.EventTaskReleased {
			released.Add(1)
		}
	})
	defer cancel()
	task := f.send(t, "boss", "queue:q", "job", hub.Normal)
	if d := f.claim(t, "w1", "sess-1", "q", 0); d == nil || d.Count != 1 {
		t.Fatalf("first claim: %+v", d)
	}
	if d := f.claim(t, "w2", "sess-2", "q", 0); d != nil {
		t.Fatalf("a held task was claimed again: %+v", d)
	}
	// The claimant's session ends: the front door releases what it holds.
	if n, err := f.h.Release(ctx(t), "sess-1", nil); err != nil || n != 1 {
		t.Fatalf("release the session: %d, %v", n, err)
	}
	if released.Load() != 1 {
		t.Errorf("%d task.released events, want 1", released.Load())
	}
	d := f.claim(t, "w2", "sess-2", "q", 0)
	if d == nil || d.MessageID != task.ID || d.Count != 2 || !d.Repeat() {
		t.Fatalf("second claim: %+v; want the task again, count 2", d)
	}
	// The first claimant's late completion is refused: it no longer holds it.
	_, err := f.h.Complete(ctx(t), hub.CompleteRequest{Workspace: qws, Agent: "w1", Readers: []string{"sess-1"}, TaskID: task.ID})
	wantKind(t, "complete after the claim ended", err, hub.Conflict)
}

func testQueueLeaseExpiry(t *testing.T, f *queueFixture) {
	task := f.send(t, "boss", "queue:q", "job", hub.Normal)
	f.claim(t, "w1", "sess-1", "q", 10*time.Second)
	f.advance(9 * time.Second)
	f.h.Sweep(ctx(t))
	if d := f.claim(t, "w2", "sess-2", "q", 0); d != nil {
		t.Fatalf("claimed before the lease ended: %+v", d)
	}
	f.advance(2 * time.Second)
	f.h.Sweep(ctx(t))
	d := f.claim(t, "w2", "sess-2", "q", 0)
	if d == nil || d.MessageID != task.ID || d.Count != 2 {
		t.Fatalf("after the lease: %+v; want the task again", d)
	}
	_, err := f.h.Complete(ctx(t), hub.CompleteRequest{Workspace: qws, Agent: "w1", Readers: []string{"sess-1"}, TaskID: task.ID})
	wantKind(t, "complete after the lease ended", err, hub.Conflict)
	_, err = f.h.Claim(ctx(t), hub.ClaimRequest{Workspace: qws, Agent: "w", Queue: "q", Reader: "r", Lease: time.Second})
	wantKind(t, "a lease under the minimum", err, hub.Invalid)
}

// testQueueRenew: a renewal extends its holder's claim past the lease it
// had (never shortening one), a non-holder's renews nothing, and a claim
// that nothing renews goes back, marked redelivered, at the default lease.
func testQueueRenew(t *testing.T, f *queueFixture) {
	if f.h.ClaimLease() != hub.DefaultClaimLease || hub.DefaultClaimLease > 5*time.Minute {
		t.Fatalf("claim lease %s, default %s: want minutes", f.h.ClaimLease(), hub.DefaultClaimLease)
	}
	task := f.send(t, "boss", "queue:q", "job", hub.Normal)
	plain := f.send(t, "boss", "w1", "a message", hub.Normal)
	f.claim(t, "w1", "cli-1", "q", 10*time.Second)
	if _, err := f.h.RenewTask(ctx(t), qws, []string{"cli-2"}, task.ID, 0); hub.KindOf(err) != hub.Conflict {
		t.Errorf("renew by a non-holder: %v, want a conflict", err)
	}
	if _, err := f.h.RenewTask(ctx(t), qws, []string{"cli-1"}, plain.ID, 0); hub.KindOf(err) != hub.Invalid {
		t.Errorf("renew a plain message: %v, want invalid", err)
	}
	f.advance(8 * time.Second)
	d, err := f.h.RenewTask(ctx(t), qws, []string{"", "cli-1"}, task.ID, 30*time.Second)
	if err != nil || d.MessageID != task.ID || !d.LeaseUntil.Equal(f.clock().UTC().Add(30*time.Second)) {
		t.Fatalf("renew by the holder: %+v, %v; want its lease 30 s from now", d, err)
	}
	if d, err := f.h.RenewTask(ctx(t), qws, []string{"cli-1"}, task.ID, 5*time.Second); err != nil || !d.LeaseUntil.Equal(f.clock().UTC().Add(30*time.Second)) {
		t.Errorf("a shorter renewal: %+v, %v; want the lease kept", d, err)
	}
	f.advance(20 * time.Second) // past the claim's first lease, within the renewed one
	f.h.Sweep(ctx(t))
	if d := f.claim(t, "w2", "cli-2", "q", 0); d != nil {
		t.Fatalf("claimed while the renewed lease runs: %+v", d)
	}
	f.advance(11 * time.Second)
	f.h.Sweep(ctx(t))
	if d := f.claim(t, "w2", "cli-2", "q", 0); d == nil || d.MessageID != task.ID || d.Count < 2 {
		t.Fatalf("after the renewed lease: %+v; want the task again, redelivered", d)
	}
	if _, err := f.h.RenewTask(ctx(t), qws, []string{"cli-1"}, task.ID, 0); hub.KindOf(err) != hub.Conflict {
		t.Errorf("renew after the claim went to another: %v, want a conflict", err)
	}
	// w2's claim, at the default lease, goes back when nothing renews it.
	f.advance(hub.DefaultClaimLease + time.Second)
	f.h.Sweep(ctx(t))
	if d := f.claim(t, "w3", "cli-3", "q", 0); d == nil || d.MessageID != task.ID || d.Count != 3 {
		t.Fatalf("after the default lease with no renewal: %+v; want the task a third time", d)
	}
}

// testQueueLiveHolder: a claim held by a live session's reader, or for an
// agent that a managed run keeps (KeepClaims), outlives its lease: each
// sweep renews it; once the reader closes or the run ends, it goes back.
func testQueueLiveHolder(t *testing.T, f *queueFixture) {
	one := f.send(t, "boss", "queue:q", "one", hub.Normal)
	two := f.send(t, "boss", "queue:q", "two", hub.Normal)
	rd := f.h.OpenReader(hub.ReaderOptions{Workspace: qws, Agent: "w1"})
	d, err := f.h.Claim(ctx(t), hub.ClaimRequest{Workspace: qws, Agent: "w1", Queue: "q", Reader: rd.Key(), Timeout: time.Second})
	if err != nil || d == nil || d.MessageID != one.ID {
		t.Fatalf("session claim: %+v, %v", d, err)
	}
	rd.Claimed(d.MessageID)
	done := f.h.KeepClaims(qws, "w2")
	if d := f.claim(t, "w2", hub.AgentClaimKey(qws, "w2"), "q", 0); d == nil || d.MessageID != two.ID {
		t.Fatalf("w2's claim: %+v", d)
	}
	for range 12 { // three leases, a sweep every quarter of one
		f.advance(hub.DefaultClaimLease / 4)
		f.h.Sweep(ctx(t))
	}
	if n, err := f.h.Store().OpenTasks(ctx(t), qws, 10); err != nil || len(n) != 2 || n[0].State != hub.Delivered || n[1].State != hub.Delivered {
		t.Fatalf("after three leases with live holders: %+v, %v; want both tasks still claimed", n, err)
	}
	done()
	rd.Lost(ctx(t)) // the session's connection closed: its claims go back at once
	if d := f.claim(t, "w3", "cli-3", "q", 0); d == nil || d.MessageID != one.ID || d.Count < 2 {
		t.Fatalf("after the session was lost: %+v; want its task back", d)
	}
	if _, err := f.h.Complete(ctx(t), hub.CompleteRequest{Workspace: qws, Agent: "w3", Readers: []string{"cli-3"}, TaskID: one.ID}); err != nil {
		t.Fatal(err)
	}
	f.advance(hub.DefaultClaimLease + time.Second)
	f.h.Sweep(ctx(t))
	if d := f.claim(t, "w4", "cli-4", "q", 0); d == nil || d.MessageID != two.ID || d.Count < 2 {
		t.Fatalf("a lease after the managed run ended: %+v; want w2's task back", d)
	}
}

func testQueueRelease(t *testing.T, f *queueFixture) {
	first := f.send(t, "boss", "queue:q", "first", hub.Normal)
	second := f.send(t, "boss", "queue:q", "second", hub.Normal)
	f.claim(t, "w1", "sess-1", "q", 0)
	_, err := f.h.ReleaseTask(ctx(t), qws, []string{"sess-2"}, first.ID)
	wantKind(t, "release by a non-holder", err, hub.Conflict)
	q, err := f.h.ReleaseTask(ctx(t), qws, []string{"sess-1"}, first.ID)
	if err != nil || q != "queue:q" {
		t.Fatalf("release: %q, %v", q, err)
	}
	// It keeps its place: ahead of the second.
	if d := f.claim(t, "w2", "sess-2", "q", 0); d == nil || d.MessageID != first.ID {
		t.Fatalf("after release, claimed %+v; want %s back in its place before %s", d, first.ID, second.ID)
	}
}

func testQueueNotATask(t *testing.T, f *queueFixture) {
	m := f.send(t, "boss", "w", "just a message", hub.Normal)
	_, err := f.h.Complete(ctx(t), hub.CompleteRequest{Workspace: qws, Agent: "w", Readers: []string{"r"}, TaskID: m.ID})
	wantKind(t, "complete a plain message", err, hub.Invalid)
	_, err = f.h.Complete(ctx(t), hub.CompleteRequest{Workspace: qws, Agent: "w", Readers: []string{"r"}, TaskID: "01NOSUCHTASK"})
	wantKind(t, "complete an unknown id", err, hub.NotFound)
	_, err = f.h.Claim(ctx(t), hub.ClaimRequest{Workspace: qws, Agent: "w", Queue: "bad name", Reader: "r"})
	wantKind(t, "claim a bad queue name", err, hub.Invalid)
	_, err = f.h.Send(ctx(t), hub.SendRequest{Workspace: qws, From: "boss", To: "queue:", Content: "x"})
	wantKind(t, "send to queue: without a name", err, hub.Invalid)
}

// waitFor polls cond until it holds or ten seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// testQueueOpenTasks: the store lists every task that is not done, waiting
// or claimed, by queue then inbox order, and nothing else.
func testQueueOpenTasks(t *testing.T, f *queueFixture) {
	crit := f.send(t, "boss", "queue:a", "critical", hub.Critical)
	n1 := f.send(t, "boss", "queue:a", "normal 1", hub.Normal)
	n2 := f.send(t, "boss", "queue:a", "normal 2", hub.Normal)
	b1 := f.send(t, "boss", "queue:b", "in b", hub.Low)
	if _, err := f.h.Send(ctx(t), hub.SendRequest{Workspace: qws, From: "boss", To: "queued", Content: "not a task"}); err != nil {
		t.Fatal(err)
	}
	if d := f.claim(t, "w1", "r1", "a", 0); d == nil || d.MessageID != crit.ID {
		t.Fatalf("first claim: got %v, want the critical task", d)
	}
	if d := f.claim(t, "w2", "r2", "a", 0); d == nil || d.MessageID != n1.ID {
		t.Fatalf("second claim: got %v, want normal 1", d)
	}
	if _, err := f.h.Complete(ctx(t), hub.CompleteRequest{Workspace: qws, Agent: "w2", Readers: []string{"r2"}, TaskID: n1.ID}); err != nil {
		t.Fatal(err)
	}
	ds, err := f.h.Store().OpenTasks(ctx(t), qws, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range ds {
		got = append(got, fmt.Sprintf("%s %s %s %s", d.Recipient, d.MessageID, d.State, d.Reader))
		if d.Message == nil || d.Message.ID != d.MessageID {
			t.Errorf("OpenTasks: %s comes without its message", d.MessageID)
		}
	}
	want := []string{"queue:a " + crit.ID + " delivered r1", "queue:a " + n2.ID + " queued ", "queue:b " + b1.ID + " queued "}
	if !slices.Equal(got, want) {
		t.Errorf("OpenTasks: got %q, want %q", got, want)
	}
	if ds, err := f.h.Store().OpenTasks(ctx(t), qws, 2); err != nil || len(ds) != 2 {
		t.Errorf("OpenTasks limit 2: got %d, %v", len(ds), err)
	}
	if ds, err := f.h.Store().OpenTasks(ctx(t), "other", 100); err != nil || len(ds) != 0 {
		t.Errorf("OpenTasks of another workspace: got %d, %v", len(ds), err)
	}
}
