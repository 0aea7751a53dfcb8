package e2e

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/store/postgres/pgtest"
)

// TestPostgresAutoWakeAcrossDaemons: a managed agent with auto-wake on daemon
// B starts a run for a message sent through daemon A, and B's live event
// stream (the dashboard's feed) shows the message and the run as they
// happen. Before events crossed daemons, only B's waiters heard of A's send.
func TestPostgresAutoWakeAcrossDaemons(t *testing.T) {
	a, b := pgEnvs(t, pgtest.Database(t))
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	ca, cb := pgClient(t, a, "alice"), pgClient(t, b, "")
	if _, err := cb.CreateManagedAgent(ctx, api.CreateManagedAgentRequest{Provider: "command", Cwd: t.TempDir(),
		Command: "echo handled {prompt}", Name: "builder", Title: "build on B"}); err != nil {
		t.Fatal(err)
	}
	a.Must("join", "--name", "alice", "--role", "lead")

	stream, err := cb.Events(ctx, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	sent, err := ca.Send(ctx, api.SendRequest{To: "builder", Content: "compile the docs"})
	if err != nil {
		t.Fatal(err)
	}
	// B's stream: A's send, then builder's run as B starts it.
	var sawSent, sawRunning bool
	var kinds []string
	for !(sawSent && sawRunning) {
		e, _, err := stream.Next(ctx)
		if err != nil {
			t.Fatalf("B's event stream after %v: %v", kinds, err)
		}
		kinds = append(kinds, e.Kind+" "+e.Agent+" "+e.Status)
		switch {
		case e.Kind == "message.sent" && e.ID == sent.MessageID:
			if e.From != "alice" || e.Preview != "compile the docs" {
				t.Errorf("message.sent on B: got %+v, want alice's message", e)
			}
			sawSent = true
		case e.Kind == api.EventManagedStatus && e.Agent == "builder" && e.Status == "running":
			if !sawSent {
				t.Errorf("builder ran before B's stream told of the message: %v", kinds)
			}
			sawRunning = true
		}
	}
	waitUntil(t, "builder's run on B to end with the message as its prompt", func() bool {
		act, err := cb.AgentActivity(ctx, "builder", 0, 50)
		return err == nil && strings.Contains(act.Content, "handled") && strings.Contains(act.Content, "compile the docs")
	})
	// A sees the run B started, live too: managed state crosses daemons.
	sa, err := ca.Events(ctx, true, []string{api.EventManagedStatus, api.EventRunEvent})
	if err != nil {
		t.Fatal(err)
	}
	defer sa.Close()
	if _, err := ca.Send(ctx, api.SendRequest{To: "builder", Content: "and again"}); err != nil {
		t.Fatal(err)
	}
	for {
		e, _, err := sa.Next(ctx)
		if err != nil {
			t.Fatalf("A's event stream: %v", err)
		}
		if e.Kind == api.EventManagedStatus && e.Agent == "builder" && e.Status == "running" {
			break
		}
	}
}

// taskPair starts two daemons in workspace team on the store at dsn, each
// taken for dead by the other after 2 s without a beat (daemon_timeout),
// registers worker through the first (a) and sends task to queue:builds

// noticeSession opens agent's MCP session through e at the warning log
// level: what the daemon pushes to it (its fencing notices) comes on the
// channel.
func noticeSession(t *testing.T, ctx context.Context, e *env, agent string) (*mcp.ClientSession, <-chan string) {
	t.Helper()
	pushed := make(chan string, 16)
	sess := e.Session(&mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
		if s, ok := r.Params.Data.(string); ok {
			pushed <- s
		}
	}}, "--agent", agent)
	if err := sess.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	return sess, pushed
}

// through the second (b).
func taskPair(t *testing.T, dsn, task string) (a, b *env) {
	t.Helper()
	envv := []string{"PARLEY_STORE=" + dsn, "PARLEY_WORKSPACE=team"}
	a, b = newEnv(t, envv...), newEnv(t, envv...)
	for _, e := range []*env{a, b} {
		if err := os.WriteFile(filepath.Join(e.home, "config.toml"), []byte("daemon_timeout = \"2s\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		e.Must("daemon", "start")
	}
	a.Must("join", "--name", "worker", "--role", "dev")
	if _, err := pgClient(t, b, "boss").Send(t.Context(), api.SendRequest{To: "queue:builds", Content: task}); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// TestPostgresDeadDaemonReclaimed: the daemon through which a task was
// claimed, a file reserved and an agent seen is killed with -9 and stays
// down; the other daemon, once the dead one has missed its heartbeat for
// daemon_timeout, gives the task to another claimant (marked redelivered),
// frees the files and shows the agent offline. Issue 29: before, the task
// waited for its 30-minute lease.
func TestPostgresDeadDaemonReclaimed(t *testing.T) {
	a, b := taskPair(t, pgtest.Database(t), "build release 1.2")
	ctx := t.Context()
	claim := func(e *env, agent string, secs int) *api.ClaimTaskResult {
		t.Helper()
		res, err := pgClient(t, e, agent).ClaimTask(ctx, api.ClaimTaskRequest{Queue: "builds", Timeout: &secs})
		if err != nil {
			t.Fatalf("claim through %s: %v", e.home, err)
		}
		return res
	}
	// Claimed with the CLI, which holds no session: the claim is the
	// agent's, renewed by parley queue renew.
	var first api.ClaimTaskResult
	a.MustJSON(&first, "queue", "claim", "builds", "--agent", "worker", "--timeout", "10s")
	if first.Task == nil || first.Task.Redelivered {
		t.Fatalf("worker's claim through A: %+v, want the task", first)
	}
	var renewed api.RenewTaskResult
	a.MustJSON(&renewed, "queue", "renew", first.Task.MessageID, "--agent", "worker", "--lease", "10m")
	if renewed.Status != "renewed" || renewed.LeaseUntil <= first.Task.LeaseUntil {
		t.Fatalf("parley queue renew: %+v after a claim until %s, want a later lease", renewed, first.Task.LeaseUntil)
	}
	excl := true
	if res, err := pgClient(t, a, "worker").Reserve(ctx, api.ReserveRequest{Paths: []string{"release/**"}, Exclusive: &excl}); err != nil || len(res.Granted) != 1 {
		t.Fatalf("worker reserves release/** through A: %+v, %v", res, err)
	}
	active := func() bool {
		var res api.ListAgentsResult
		b.MustJSON(&res, "agents")
		for _, ag := range res.Agents {
			if ag.Name == "worker" {
				return ag.Status == "active"
			}
		}
		return false
	}
	if !active() {
		t.Fatal("worker, just seen through A, is not active on B")
	}
	// Nothing moves while A lives.
	if res := claim(b, "other", 1); res.Task != nil {
		t.Fatalf("a claim through B while A lives got %+v, want none", res.Task)
	}

	killed := time.Now()
	a.kill9()
	t.Logf("A died %v after kill -9", time.Since(killed).Round(100*time.Millisecond))
	second := claim(b, "other", 60)
	took := time.Since(killed)
	if second.Task == nil || second.Task.MessageID != first.Task.MessageID || !second.Task.Redelivered || second.Task.DeliveryCount != 2 {
		t.Fatalf("claim through B after A's kill -9: %+v, want task %s handed out again (redelivered, count 2)", second.Task, first.Task.MessageID)
	}
	t.Logf("the task went to another claimant %v after A's kill -9 (daemon_timeout 2s)", took.Round(100*time.Millisecond))
	if took > 2*2*time.Second {
		t.Errorf("the task claimed through the killed daemon came back after %v, want within twice daemon_timeout (4s)", took)
	}
	if out, errOut, code := b.Run("queue", "renew", first.Task.MessageID, "--agent", "worker"); code == 0 || !strings.Contains(errOut, "another claimant") {
		t.Errorf("worker renews, through B, the task that went to another claimant: exit %d, %s%s; want it refused, saying so", code, out, errOut)
	}
	if res, err := pgClient(t, b, "other").Reserve(ctx, api.ReserveRequest{Paths: []string{"release/notes.md"}, Exclusive: &excl}); err != nil || len(res.Granted) != 1 {
		t.Errorf("other reserves release/notes.md through B: %+v, %v; want it granted", res, err)
	}
	waitUntil(t, "worker offline on B", func() bool { return !active() })
	log, _ := os.ReadFile(filepath.Join(b.home, "daemon.log"))
	if !strings.Contains(string(log), "a daemon on the store is dead") {
		t.Errorf("B's daemon.log does not say it reclaimed A")
	}
}

// TestPostgresBackupRestore: the backup docs/team-server.md describes, done
// for real: pg_dump of a live team server's database, pg_restore into a new
// one, a daemon on it finds every message and each copy's state.
func TestPostgresBackupRestore(t *testing.T) {
	bin, err := pgtest.BinDir()
	if err != nil {
		t.Skip(err)
	}
	src := pgtest.Database(t)
	a := newEnv(t, "PARLEY_STORE="+src, "PARLEY_WORKSPACE=team")
	a.Must("daemon", "start")
	a.Must("join", "--name", "bob", "--role", "dev")
	a.Must("send", "bob", "read before the backup", "--agent", "alice")
	a.Must("inbox", "--agent", "bob")
	a.Must("send", "bob", "unread at the backup", "--agent", "alice")

	dump := filepath.Join(t.TempDir(), "parley.dump")
	if out, err := osexec.Command(filepath.Join(bin, "pg_dump"), "--format=custom", "--file="+dump, src).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump of the live database: %v\n%s", err, out)
	}
	a.Must("daemon", "stop")
	dst := pgtest.Database(t)
	if out, err := osexec.Command(filepath.Join(bin, "pg_restore"), "--no-owner", "--dbname="+dst, dump).CombinedOutput(); err != nil {
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}
	b := newEnv(t, "PARLEY_STORE="+dst, "PARLEY_WORKSPACE=team")
	b.Must("daemon", "start")
	if out := b.Must("inbox", "--agent", "bob"); !strings.Contains(out, "unread at the backup") || strings.Contains(out, "read before the backup") {
		t.Errorf("bob's inbox after the restore: want only the message unread at the backup:\n%s", out)
	}
	if out := b.Must("search", "backup", "--agent", "bob"); !strings.Contains(out, "read before the **backup**") {
		t.Errorf("search after the restore: want the message read before the backup:\n%s", out)
	}
}

// TestPostgresOutageRunsNoTaskTwice: PostgreSQL goes away for longer than
// daemon_timeout with both daemons alive. The daemon a task was claimed and
// a file reserved through tells its clients at once, on its event stream,
// that the claim may be lost and the reservation is to be taken as ended;
// once the store is back, it says all stands, and nobody took anybody for
// dead: no second claimant gets the task, the first one's completion goes
// through, the reservation still holds. Issue 41: the other daemon took the
// first for dead at once and gave its task to a second claimant.
func TestPostgresOutageRunsNoTaskTwice(t *testing.T) {
	cluster := pgtest.Private(t)
	const timeout = 2 * time.Second
	a, b := taskPair(t, cluster.DSN("postgres"), "build release 1.3")
	ctx := t.Context()
	var first api.ClaimTaskResult
	a.MustJSON(&first, "queue", "claim", "builds", "--agent", "worker", "--timeout", "10s")
	if first.Task == nil {
		t.Fatalf("worker's claim through A: %+v, want the task", first)
	}
	excl := true
	if res, err := pgClient(t, a, "worker").Reserve(ctx, api.ReserveRequest{Paths: []string{"release/**"}, Exclusive: &excl}); err != nil || len(res.Granted) != 1 {
		t.Fatalf("worker reserves release/** through A: %+v, %v", res, err)
	}
	stream, err := pgClient(t, a, "").Events(ctx, true, []string{"daemon.store", "task.at_risk", "reservations.changed"})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	evs := make(chan api.Event, 64)
	go func() {
		defer close(evs)
		for {
			e, _, err := stream.Next(ctx)
			if err != nil {
				return
			}
			evs <- e
		}
	}()
	next := func(what string, match func(api.Event) bool) api.Event {
		t.Helper()
		var saw []string
		deadline := time.After(30 * time.Second)
		for {
			select {
			case e, ok := <-evs:
				if !ok {
					t.Fatalf("A's event stream ended before %s; saw %v", what, saw)
				}
				if match(e) {
					return e
				}
				saw = append(saw, e.Kind+" "+e.Status+e.Change)
			case <-deadline:
				t.Fatalf("A's event stream did not say %s within 30 s; saw %v", what, saw)
			}
		}
	}

	// worker's MCP session through A is told too, pushed and in its next
	// tool result.
	sess, pushed := noticeSession(t, ctx, a, "worker")

	stopped := time.Now()
	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	// When A told, by its own clock (the same machine's): what the test
	// goroutine's reading of the stream adds under load is not A's.
	told := next("that A is cut off", func(e api.Event) bool { return e.Kind == "daemon.store" && e.Status == "cut" }).Time.Sub(stopped)
	risk := next("that worker's claim may be lost", func(e api.Event) bool { return e.Kind == "task.at_risk" })
	if risk.Agent != "worker" || risk.ID != first.Task.MessageID || !strings.Contains(risk.Text, "may be lost") {
		t.Errorf("task.at_risk: %+v, want worker's task %s", risk, first.Task.MessageID)
	}
	if e := next("that worker's reservation is to be taken as ended", func(e api.Event) bool { return e.Kind == "reservations.changed" && e.Change == "ended" }); len(e.Reservations) != 1 || e.Reservations[0].Agent != "worker" {
		t.Errorf("reservations ended: %+v, want worker's release/**", e)
	}
	var heard []string
	for _, want := range []string{"may be lost", "reservation of release/** ended"} {
		waitFor(t, 10*time.Second, "a notice pushed to worker's session: "+want, func() (bool, string) {
			for len(pushed) > 0 {
				heard = append(heard, <-pushed)
			}
			return strings.Contains(strings.Join(heard, "\n"), want), strings.Join(heard, " | ")
		})
	}
	t.Logf("A told its clients %v after the store went away (daemon_timeout %s)", told.Round(100*time.Millisecond), timeout)
	// A's last beat was at most a third of the bound before the store
	// went away; the others could take it for dead a bound after that.
	if told > timeout+timeout/3 {
		t.Errorf("A told its clients %v after the store went away, want within daemon_timeout %s of its last beat: before the others may take it for dead", told, timeout)
	}
	// An outage of 5 s, over twice the bound.
	waitFor(t, 10*time.Second, "the store down for 5 s", func() (bool, string) { return time.Since(stopped) >= 5*time.Second, "" })
	if err := cluster.Start(); err != nil {
		t.Fatal(err)
	}
	next("that A reached its store again, all standing", func(e api.Event) bool { return e.Kind == "daemon.store" && e.Status == "restored" })
	res0 := call(t, sess, "whoami", nil, nil)
	notes, _ := res0.Meta["parley/notices"].([]any)
	var said []string
	for _, n := range notes {
		said = append(said, fmt.Sprint(n))
	}
	for _, want := range []string{"may be lost", "reservation of release/** ended", "reached its store again"} {
		if !strings.Contains(strings.Join(said, "\n"), want) {
			t.Errorf("worker's next tool result after the outage carries notices %q, want one saying %q", said, want)
		}
	}
	if again := call(t, sess, "whoami", nil, nil); again.Meta["parley/notices"] != nil {
		t.Errorf("a second tool result repeats the notices: %v", again.Meta["parley/notices"])
	}

	// For twice the bound after, nobody is taken for dead.
	secs := int(2 * timeout / time.Second)
	res, err := pgClient(t, b, "other").ClaimTask(ctx, api.ClaimTaskRequest{Queue: "builds", Timeout: &secs})
	if err != nil || res.Task != nil {
		t.Fatalf("a second claimant through B after the outage: %+v, %v; want no task (it is worker's)", res.Task, err)
	}
	if out := a.Must("queue", "complete", first.Task.MessageID, "--agent", "worker", "--result", "built once"); !strings.Contains(out, "completed") {
		t.Errorf("worker completes its task after the outage: %s", out)
	}
	if res, err := pgClient(t, b, "other").Reserve(ctx, api.ReserveRequest{Paths: []string{"release/notes.md"}, Exclusive: &excl}); err != nil || len(res.Conflicts) != 1 {
		t.Errorf("other reserves release/notes.md through B after the outage: %+v, %v; want a conflict with worker's reservation", res, err)
	}
	for _, e := range []*env{a, b} {
		log, _ := os.ReadFile(filepath.Join(e.home, "daemon.log"))
		if strings.Contains(string(log), "a daemon on the store is dead") {
			t.Errorf("%s's daemon.log: it took the other daemon for dead over the store's outage", e.home)
		}
	}
}

// TestPostgresRestartLosesNoRelayedEvent: PostgreSQL restarts (down 4 s)
// while a sender keeps sending through daemon A. Every send A acknowledged
// reaches daemon B's event stream once, in order, including those acked
// after the restart and before B listened again (issue 41: 68-82 of about
// 200 were lost to B's subscribers).
func TestPostgresRestartLosesNoRelayedEvent(t *testing.T) {
	cluster := pgtest.Private(t)
	a, b := pgEnvs(t, cluster.DSN("postgres"))
	ctx := t.Context()
	stream, err := pgClient(t, b, "").Events(ctx, true, []string{"message.sent"})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	heard := make(chan string, 4096)
	go func() {
		for {
			e, _, err := stream.Next(ctx)
			if err != nil {
				close(heard)
				return
			}
			heard <- e.ID
		}
	}()
	ca := pgClient(t, a, "alice")
	var acked []string
	send := func(i int) bool {
		res, err := ca.Send(ctx, api.SendRequest{To: "bob", Content: fmt.Sprint("send ", i)})
		if err == nil {
			acked = append(acked, res.MessageID)
		}
		return err == nil
	}
	for i := range 20 {
		if !send(i) {
			t.Fatal("a send before the restart failed")
		}
	}
	stopped := time.Now()
	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the store down for 4 s", func() (bool, string) { return time.Since(stopped) >= 4*time.Second, "" })
	if err := cluster.Start(); err != nil {
		t.Fatal(err)
	}
	// Send at once and on, through the moment B listens again.
	before := len(acked)
	for i := 20; len(acked) < before+200; i++ {
		send(i)
	}
	var got []string
	seen := map[string]int{}
	deadline := time.After(30 * time.Second)
	for len(got) < len(acked) {
		select {
		case id, ok := <-heard:
			if !ok {
				t.Fatalf("B's event stream ended after %d of %d sends", len(got), len(acked))
			}
			seen[id]++
			got = append(got, id)
		case <-deadline:
			missing := 0
			for _, id := range acked {
				if seen[id] == 0 {
					missing++
				}
			}
			t.Fatalf("B's event stream told of %d of the %d acked sends within 30 s: %d missing", len(got), len(acked), missing)
		}
	}
	if !slices.Equal(got, acked) {
		t.Errorf("B's event stream: %d events, want the %d acked sends each once, in order", len(got), len(acked))
	}
}
