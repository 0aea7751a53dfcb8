package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/client"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/store/postgres/pgtest"
)

// pgEnvs starts two installations (two PARLEY_HOMEs, as on two machines) whose
// daemons share the PostgreSQL database at dsn.
func pgEnvs(t *testing.T, dsn string, extraEnv ...string) (*env, *env) {
	t.Helper()
	envv := append([]string{"PARLEY_STORE=" + dsn, "PARLEY_WORKSPACE=team"}, extraEnv...)
	a := newEnv(t, envv...)
	b := newEnv(t, envv...)
	a.Must("daemon", "start")
	b.Must("daemon", "start")
	return a, b
}

func pgClient(t *testing.T, e *env, agent string) *client.Client {
	t.Helper()
	paths, err := home.Resolve(e.home)
	if err != nil {
		t.Fatal(err)
	}
	return client.New(paths).As("team", agent)
}

// withPassword puts a password into a test DSN; the test server trusts every
// local connection, so it is ignored, but it must never be shown.
func withPassword(t *testing.T, dsn, pw string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("postgres", pw)
	return u.String()
}

// TestPostgresTwoDaemons: two daemons on one database behave as one bus:
// presence, roles, groups and @everyone span them, and a wait on one wakes
// when the other sends.
func TestPostgresTwoDaemons(t *testing.T) {
	const secret = "s3cret-pw"
	dsn := withPassword(t, pgtest.Database(t), secret)
	a, b := pgEnvs(t, dsn)

	var st struct {
		Running  bool   `json:"running"`
		Store    string `json:"store"`
		Database string `json:"database"`
	}
	a.MustJSON(&st, "daemon", "status")
	if st.Store != "postgres" || !strings.HasPrefix(st.Database, "postgres://") {
		t.Errorf("status: store %q, database %q; want postgres and its URL", st.Store, st.Database)
	}
	if out := a.Must("daemon", "status"); strings.Contains(out, secret) || !strings.Contains(out, "postgres") {
		t.Errorf("status shows the password, or not the store:\n%s", out)
	}

	a.Must("join", "--name", "alice", "--role", "planner")
	b.Must("join", "--name", "bob", "--role", "dev")
	b.Must("join", "--name", "carol", "--role", "dev")

	// Presence: each daemon lists the agents of the other.
	var agents struct {
		Agents []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
			Host   string `json:"host"`
		} `json:"agents"`
	}
	a.MustJSON(&agents, "agents")
	var names []string
	host, _ := os.Hostname()
	for _, ag := range agents.Agents {
		names = append(names, ag.Name)
		if ag.Host != host || ag.Status != "active" {
			t.Errorf("agent %s on daemon A: host %q, presence %q; want %q, active", ag.Name, ag.Host, ag.Status, host)
		}
	}
	if want := []string{"alice", "bob", "carol"}; !slices.Equal(names, want) {
		t.Errorf("agents on daemon A: got %v, want %v", names, want)
	}

	// Groups made on one daemon are seen and used on the other.
	a.Must("group", "create", "reviewers")
	a.Must("group", "add", "reviewers", "carol")
	if out := b.Must("group", "show", "reviewers"); !strings.Contains(out, "carol") {
		t.Errorf("group made on A, shown on B: want carol in\n%s", out)
	}

	// A wait on B wakes when A sends: LISTEN/NOTIFY across the daemons.
	for i := range 5 {
		wait := b.Cmd("wait", "--agent", "bob", "--timeout", "30s", "--json")
		var out syncBuffer
		wait.Stdout = &out
		if err := wait.Start(); err != nil {
			t.Fatal(err)
		}
		// The wait registers before it looks, so it gets the message whether
		// it blocked before the send or not; it nearly always has (spawning
		// the send takes longer), and then only a wake-up from A, across
		// PostgreSQL, returns it before its timeout.
		text := fmt.Sprint("cross-daemon ", i)
		a.Must("send", "bob", text, "--agent", "alice")
		if err := wait.Wait(); err != nil {
			t.Fatalf("wait on B: %v (out %s)", err, out.String())
		}
		if !strings.Contains(out.String(), text) {
			t.Fatalf("wait on B: got %s, want %q", out.String(), text)
		}
	}

	// @dev sent on A reaches bob and carol (who joined on B); @reviewers and
	// @everyone sent on B reach agents of A.
	a.Must("send", "@dev", "role across daemons", "--agent", "alice")
	b.Must("send", "@reviewers", "group across daemons", "--agent", "bob")
	b.Must("send", "@everyone", "everyone across daemons", "--agent", "carol")
	for _, c := range []struct {
		e     *env
		agent string
		want  []string
	}{
		{b, "bob", []string{"role across daemons", "everyone across daemons"}},
		{a, "carol", []string{"role across daemons", "group across daemons"}},
		{a, "alice", []string{"everyone across daemons"}},
	} {
		out := c.e.Must("inbox", "--agent", c.agent)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("inbox of %s: want %q in\n%s", c.agent, w, out)
			}
		}
	}

	for _, e := range []*env{a, b} {
		log, _ := os.ReadFile(e.home + "/daemon.log")
		if strings.Contains(string(log), secret) {
			t.Errorf("daemon.log of %s holds the database password", e.home)
		}
	}
}

// TestPostgresRestartMidStorm restarts PostgreSQL under a storm of sends
// through two daemons: while it is down sends fail as unavailable (503), none
// that was acknowledged is lost, a wait blocked across the restart still gets
// its message, and the daemons carry on without a restart of their own.
func TestPostgresRestartMidStorm(t *testing.T) {
	cluster := pgtest.Private(t)
	a, b := pgEnvs(t, cluster.DSN("postgres"), "PARLEY_PROGRESS_EVERY=20ms")
	ctx := t.Context()

	// wally waits through MCP on B. Progress is sent only while a wait sleeps,
	// after its first look: the first notification says it is blocked. (A
	// wait whose first look meets the outage fails at once, by design.)
	blocked := make(chan struct{})
	var once sync.Once
	wally := b.Session(&mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
		once.Do(func() { close(blocked) })
	}}, "--agent", "wally")
	waiter := make(chan *waitResult, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "wait_for_message", Arguments: map[string]any{"timeout": 120}}
		params.SetProgressToken("wally")
		res, err := wally.CallTool(ctx, params)
		var w *waitResult
		switch {
		case err != nil:
			t.Errorf("wait across the restart: %v", err)
		case res.IsError:
			t.Errorf("wait across the restart: %s", text(res))
		default:
			w = new(waitResult)
			b, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(b, w); err != nil {
				t.Errorf("wait across the restart: decode %s: %v", b, err)
			}
		}
		waiter <- w
	}()
	select {
	case <-blocked:
	case <-time.After(30 * time.Second):
		t.Fatal("wally's wait did not block within 30 s")
	}

	const senders = 8
	var (
		mu          sync.Mutex
		acked       = map[string]bool{}
		unavailable int
		other       []error
		afterStart  int
		restarted   bool
		stop        = make(chan struct{})
		wg          sync.WaitGroup
	)
	for i := range senders {
		e := a
		if i%2 == 1 {
			e = b
		}
		c := pgClient(t, e, fmt.Sprint("sender", i))
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				res, err := c.Send(ctx, api.SendRequest{To: "bob", Content: fmt.Sprint("storm ", i, " ", n)})
				mu.Lock()
				switch {
				case err == nil:
					acked[res.MessageID] = true
					if restarted {
						afterStart++
					}
				case hub.KindOf(err) == hub.Unavailable:
					unavailable++
				default:
					other = append(other, err)
				}
				mu.Unlock()
			}
		})
	}
	count := func(f func() bool) bool { mu.Lock(); defer mu.Unlock(); return f() }
	waitUntil(t, "200 sends acknowledged", func() bool { return count(func() bool { return len(acked) >= 200 }) })
	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "sends refused as unavailable", func() bool { return count(func() bool { return unavailable >= 20 }) })
	if err := cluster.Start(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	restarted = true
	mu.Unlock()
	waitUntil(t, "200 sends acknowledged after the restart", func() bool { return count(func() bool { return afterStart >= 200 }) })
	close(stop)
	wg.Wait()

	if _, err := pgClient(t, a, "sender0").Send(ctx, api.SendRequest{To: "wally", Content: "after the restart"}); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-waiter:
		if res == nil || res.Message == nil || res.Message.Content != "after the restart" {
			t.Errorf("wait across the restart: got %+v, want the message sent after it", res)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("wait across the restart: no wake-up within 30 s")
	}

	got := map[string]bool{}
	bob := pgClient(t, b, "bob")
	for {
		res, err := bob.Check(ctx, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) == 0 {
			break
		}
		for _, m := range res.Messages {
			got[m.MessageID] = true
		}
	}
	lost := 0
	for id := range acked {
		if !got[id] {
			lost++
		}
	}
	t.Logf("restart mid storm: %d sends acknowledged, %d refused as unavailable, %d other errors, %d delivered; %d acknowledged lost",
		len(acked), unavailable, len(other), len(got), lost)
	if lost != 0 {
		t.Errorf("%d acknowledged sends lost, want 0", lost)
	}
	for _, err := range other[:min(len(other), 5)] {
		t.Errorf("send failed with an error that is not unavailable: %v (kind %s)", err, hub.KindOf(err))
	}
}

// TestPostgresKill9OneDaemon: a daemon killed with SIGKILL takes nothing of
// the other's with it; what was sent through it is there, the survivor
// serves on, and a wait blocked on the survivor meanwhile gets its message.
func TestPostgresKill9OneDaemon(t *testing.T) {
	a, b := pgEnvs(t, pgtest.Database(t))
	ctx := t.Context()
	var ids []string
	for i := range 20 {
		e := a
		if i%2 == 1 {
			e = b
		}
		res, err := pgClient(t, e, "alice").Send(ctx, api.SendRequest{To: "bob", Content: fmt.Sprint("before ", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.MessageID)
	}
	// A wait on the survivor, under way while the other dies, still ends
	// with the message sent after.
	waited := make(chan *api.WaitResult, 1)
	go func() {
		res, err := pgClient(t, b, "wally").Wait(ctx, api.WaitRequest{Timeout: new(60)})
		if err != nil {
			t.Errorf("wait on the survivor: %v", err)
		}
		waited <- res
	}()
	a.kill9()
	if _, err := pgClient(t, b, "alice").Send(ctx, api.SendRequest{To: "wally", Content: "to the survivor"}); err != nil {
		t.Fatalf("send to wally through the survivor: %v", err)
	}
	if res := <-waited; res == nil || res.Message == nil || res.Message.Content != "to the survivor" {
		t.Errorf("wait on the survivor across the other's kill -9: got %+v, want the message sent after", res)
	}
	res, err := pgClient(t, b, "alice").Send(ctx, api.SendRequest{To: "bob", Content: "after"})
	if err != nil {
		t.Fatalf("send through the survivor: %v", err)
	}
	ids = append(ids, res.MessageID)
	inbox, err := pgClient(t, b, "bob").Check(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range inbox.Messages {
		got = append(got, m.MessageID)
	}
	slices.Sort(got)
	slices.Sort(ids)
	if !slices.Equal(got, ids) {
		t.Errorf("bob's inbox on the survivor: got %d messages, want all %d sent through both", len(got), len(ids))
	}
}

// TestPostgresPermissionAcrossDaemons: an agent on daemon A asks permission;
// daemon B lists the request and `parley allow` there decides it; the agent
// on A gets the decision at once (through NOTIFY), not at its timeout.
func TestPostgresPermissionAcrossDaemons(t *testing.T) {
	a, b := pgEnvs(t, pgtest.Database(t))
	type outcome struct {
		State string `json:"state"`
	}
	got := make(chan outcome, 1)
	go func() {
		var out outcome
		code, body, err := a.apiCall(t.Context(), a.httpClient(), "POST", "/permissions", "team", "alice",
			api.AskPermissionRequest{ToolName: "Bash", Input: []byte(`{"command":"make"}`), Source: "claude-hook", Wait: 120})
		if err != nil || code != 200 {
			t.Errorf("ask on A: %d %v %s", code, err, body)
		} else if err := json.Unmarshal(body, &out); err != nil {
			t.Errorf("ask on A: %v", err)
		}
		got <- out
	}()
	var id string
	waitUntil(t, "the request listed on B", func() bool {
		var res api.PermissionsResult
		b.mustAPI("GET", "/permissions", "team", "", nil, &res)
		if len(res.Permissions) == 1 {
			id = res.Permissions[0].Request.RequestID
		}
		return id != ""
	})
	start := time.Now()
	b.Must("allow", id)
	select {
	case out := <-got:
		if out.State != "allowed" {
			t.Errorf("A's request after `parley allow` on B: state %q, want allowed", out.State)
		}
		t.Logf("allowed on B, answered on A after %v", time.Since(start))
	case <-time.After(60 * time.Second):
		t.Fatal("A's request was not answered within 60 s of the decision on B")
	}
}

// TestPostgresManagedAcrossDaemons: a managed agent launched on daemon A runs
// there and is visible from B: B lists it with A as its node, shows its runs
// and its timeline; B refuses to prompt it with an error naming A, where a
// prompt runs it.
func TestPostgresManagedAcrossDaemons(t *testing.T) {
	a, b := pgEnvs(t, pgtest.Database(t))
	ctx := t.Context()
	ca, cb := pgClient(t, a, ""), pgClient(t, b, "")
	if _, err := ca.CreateManagedAgent(ctx, api.CreateManagedAgentRequest{Provider: "command", Cwd: t.TempDir(),
		Command: "echo done {prompt}", Prompt: "first", Name: "builder", Title: "build it"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.WaitAgent(ctx, "builder", 30); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	nodeA := host + ":" + a.home

	res, err := cb.ManagedAgents(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Count != 1 || res.Agents[0].AgentID != "builder" || res.Agents[0].Node != nodeA || res.Agents[0].Title != "build it" {
		t.Fatalf("managed agents listed on B: got %+v, want builder, run by %s", res.Agents, nodeA)
	}
	if res, err := ca.ManagedAgents(ctx, false); err != nil || res.Count != 1 || res.Agents[0].Node != "" {
		t.Errorf("managed agents listed on A: got %+v, %v; want builder as A's own (no node)", res, err)
	}
	d, err := cb.ManagedAgent(ctx, "builder")
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != "idle" || d.Runs != 1 || len(d.RecentRuns) != 1 || d.RecentRuns[0].State != "completed" {
		t.Errorf("builder shown on B: status %q, %d runs %+v; want idle after one completed run", d.Status, d.Runs, d.RecentRuns)
	}
	act, err := cb.AgentActivity(ctx, "builder", 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(act.Content, "done first") {
		t.Errorf("builder's activity read on B: want its output \"done first\" in\n%s", act.Content)
	}

	_, err = cb.PromptAgent(ctx, "builder", "second")
	if hub.KindOf(err) != hub.Conflict || !strings.Contains(err.Error(), nodeA) {
		t.Errorf("prompt builder on B: got %v, want a conflict naming %s", err, nodeA)
	}
	if _, err := ca.PromptAgent(ctx, "builder", "second"); err != nil {
		t.Fatalf("prompt builder on A: %v", err)
	}
	waitUntil(t, "B to see builder's second run end", func() bool {
		d, err := cb.ManagedAgent(ctx, "builder")
		return err == nil && d.Runs == 2 && d.Status == "idle"
	})
}

// TestPostgresDeadClientGoneEverywhere: clients of daemon A killed with -9
// are shown gone by daemon B within the 30 s that one daemon meets, not when
// their last-seen time ages out (2 minutes): A records in the database when
// their last session ended. One that connects again, through B, is active on
// A again.
func TestPostgresDeadClientGoneEverywhere(t *testing.T) {
	const n = 10
	a, b := pgEnvs(t, pgtest.Database(t))
	active := func(e *env) map[string]bool {
		var res api.ListAgentsResult
		e.MustJSON(&res, "agents", "--json", "--workspace", "dead")
		act := map[string]bool{}
		for _, ag := range res.Agents {
			if ag.Status == "active" {
				act[ag.Name] = true
			}
		}
		return act
	}
	connect := func(e *env, agent string) *osexec.Cmd {
		cmd := e.Cmd("mcp", "serve", "--workspace", "dead", "--agent", agent)
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		// The pipes stay open: the client dies with them, by signal.
		io.WriteString(stdin, initializeLine)
		if _, err := bufio.NewReader(stdout).ReadBytes('\n'); err != nil {
			t.Fatalf("client %s: read initialize result: %v", agent, err)
		}
		io.WriteString(stdin, initializedLine)
		return cmd
	}
	clients := make([]*osexec.Cmd, n)
	for i := range clients {
		clients[i] = connect(a, fmt.Sprintf("d%02d", i))
	}
	waitUntil(t, fmt.Sprintf("%d agents of A active on B", n), func() bool { return len(active(b)) == n })

	for _, c := range clients {
		c.Process.Kill()
	}
	killed := time.Now()
	for _, c := range clients {
		c.Wait()
	}
	waitFor(t, 30*time.Second, "the killed clients to be gone on both daemons", func() (bool, string) {
		onA, onB := active(a), active(b)
		return len(onA) == 0 && len(onB) == 0, fmt.Sprintf("active on A %v, on B %v; want none", onA, onB)
	})
	t.Logf("%d clients of A killed: gone on both daemons after %s", n, time.Since(killed).Round(100*time.Millisecond))

	connect(b, "d00")
	waitFor(t, 10*time.Second, "d00, back through B, active on A", func() (bool, string) {
		onA := active(a)
		return onA["d00"] && len(onA) == 1, fmt.Sprintf("active on A: %v; want d00 alone", onA)
	})
}

// TestPostgresFromConfigFile: `store = "postgres://..."` in config.toml
// selects the database as PARLEY_STORE does: a daemon configured by its
// file and one by the environment share one bus.
func TestPostgresFromConfigFile(t *testing.T) {
	dsn := pgtest.Database(t)
	a := newEnv(t, "PARLEY_STORE="+dsn, "PARLEY_WORKSPACE=team")
	b := newEnv(t, "PARLEY_WORKSPACE=team")
	if err := os.WriteFile(filepath.Join(b.home, "config.toml"), []byte(fmt.Sprintf("store = %q\n", dsn)), 0o600); err != nil {
		t.Fatal(err)
	}
	a.Must("daemon", "start")
	b.Must("daemon", "start")
	var st struct {
		Store string `json:"store"`
	}
	b.MustJSON(&st, "daemon", "status")
	if st.Store != "postgres" {
		t.Errorf("daemon with store in config.toml: store %q, want postgres", st.Store)
	}
	a.Must("join", "--name", "alice", "--role", "planner")
	if out := b.Must("agents"); !strings.Contains(out, "alice") {
		t.Errorf("agents on the daemon configured by file: want alice, who joined on the other, in\n%s", out)
	}
}

// TestPostgresIdempotentSendAfterPurge: on PostgreSQL, a message sent with
// an idempotency key, read, then purged with everything read (a retention
// far shorter than the key's 24 h window), is still its key's: a retry
// from the CLI answers with the first message, replayed, and sends nothing.
func TestPostgresIdempotentSendAfterPurge(t *testing.T) {
	e := newEnv(t, "PARLEY_STORE="+pgtest.Database(t), "PARLEY_WORKSPACE=team")
	e.Must("daemon", "start")
	type sendResult struct {
		ID       string `json:"message_id"`
		Replayed bool   `json:"replayed"`
	}
	send := []string{"send", "bob", "deploy 1.4 now", "--agent", "alice", "--idempotency-key", "deploy-1.4", "--json"}
	var first, again sendResult
	e.MustJSON(&first, send...)
	if first.ID == "" || first.Replayed {
		t.Fatalf("the first send: %+v", first)
	}
	if out := e.Must("inbox", "--agent", "bob"); !strings.Contains(out, "deploy 1.4 now") {
		t.Fatalf("bob's inbox: %q, want the message", out)
	}
	e.Must("purge", "--older-than", "1ms")
	e.MustJSON(&again, send...)
	if again.ID != first.ID || !again.Replayed {
		t.Errorf("the retry after the purge: %+v, want the first message %s, replayed", again, first.ID)
	}
	if out := e.Must("inbox", "--agent", "bob"); strings.Contains(out, "deploy 1.4 now") {
		t.Errorf("bob's inbox after the retry: %q, want nothing new", out)
	}
}
