package runner_test

// End-to-end tests of managed agents: the real parley binary runs a real
// daemon in a temporary PARLEY_HOME; a go-sdk client drives the manager
// profile through `parley mcp serve`; the agents are testdata/fakeclaude,
// which speaks Claude Code's stream-json and calls request_permission,
// set_branch and send_message through the MCP config the runner gives it.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/proc"
	"github.com/parley-dev/parley/internal/testenv"
)

var bin, fake string

func TestMain(m *testing.M) {
	var err error
	if bin, err = testenv.Binary(testenv.Parley, buildFlags...); err == nil {
		fake, err = testenv.Binary(testenv.FakeClaude, buildFlags...)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

const ws = "rt"

// env is one Parley installation with its daemon, whose claude provider is
// the fake, kept across turns (the default), and whose perturn provider is
// the fake run once per turn (steer = false).
type env struct {
	*testenv.Env
	t    testing.TB
	home string
	log  string // the fake's argv log
}

func newEnv(t testing.TB, config string) *env {
	t.Helper()
	// The fake's log is in a directory of the test's: the state directory
	// is made by testenv.New, after the environment is set.
	log := filepath.Join(t.TempDir(), "fake.log")
	te := testenv.New(t, bin, &testenv.Options{Prefix: "pl", Start: true,
		Config: fmt.Sprintf("%s\n[providers.claude]\ncommand = %q\n[providers.perturn]\nkind = \"claude\"\ncommand = %q\nsteer = false\n", config, fake, fake),
		Env:    []string{"PARLEY_WORKSPACE=" + ws, "FAKECLAUDE_LOG=" + log, "PARLEY_PROGRESS_EVERY=200ms"}})
	return &env{Env: te, t: t, home: te.Home, log: log}
}

func (e *env) manager() *mcp.ClientSession {
	return e.Session(nil, "--agent", "boss", "--profile", "manager")
}

// fakeRuns returns the fake's log: one entry per turn.
func (e *env) fakeRuns() []map[string]any {
	f, err := os.Open(e.log)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// gone reports whether the fake of turn i (from 0) has ended (a zombie that
// nobody reaps counts as ended).
func (e *env) gone(i int) bool {
	runs := e.fakeRuns()
	if i >= len(runs) {
		return false
	}
	pid, _ := runs[i]["pid"].(float64)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", int(pid)))
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "Z")
}

// call calls a tool; it fails the test on a protocol error.
func call(t testing.TB, s *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if out != nil && !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("decode %s result %s: %v", name, b, err)
		}
	}
	return res
}

func mustCall(t testing.TB, s *mcp.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	if res := call(t, s, name, args, out); res.IsError {
		t.Fatalf("call %s(%v): tool error: %s", name, args, text(res))
	}
}

// toolError calls a tool that must fail and returns its message.
func toolError(t testing.TB, s *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res := call(t, s, name, args, nil)
	if !res.IsError {
		t.Fatalf("call %s(%v): got success %s, want a tool error", name, args, text(res))
	}
	return text(res)
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func wait(t testing.TB, m *mcp.ClientSession, id string) api.WaitAgentResult {
	t.Helper()
	var w api.WaitAgentResult
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": id, "timeout": 60}, &w)
	if w.TimedOut {
		t.Fatalf("wait_for_agent %s timed out: %+v", id, w)
	}
	return w
}

func activity(t testing.TB, m *mcp.ClientSession, id string) api.ActivityResult {
	t.Helper()
	var a api.ActivityResult
	mustCall(t, m, "get_agent_activity", map[string]any{"agent_id": id, "offset": 0, "limit": 1000}, &a)
	return a
}

// hasEvent reports whether some event of kind has text containing sub.
func hasEvent(a api.ActivityResult, kind, sub string) bool {
	for _, e := range a.Events {
		if e.Kind == kind && strings.Contains(e.Text, sub) {
			return true
		}
	}
	return false
}

// eventually polls cond until it holds or 30 s pass.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sleeping(t testing.TB, m *mcp.ClientSession, id string) func() bool {
	return func() bool { return hasEvent(activity(t, m, id), "text", "sleeping") }
}

// TestPermissionLoop runs create -> run -> permission request -> answer (by
// the manager, then by the CLI) -> run completes, and checks the timeline.
func TestPermissionLoop(t *testing.T) {
	e := newEnv(t, "")
	m := e.manager()
	dir := t.TempDir()

	var a api.ManagedAgent
	mustCall(t, m, "create_agent", map[string]any{"provider": "claude", "cwd": dir, "title": "perm test", "prompt": "need permission please", "name": "w1"}, &a)
	if a.AgentID != "w1" || a.Status != "running" || a.Title != "perm test" || a.Cwd != dir {
		t.Fatalf("create_agent: got %+v, want w1 running in %s", a, dir)
	}

	w := wait(t, m, "w1")
	if w.Status != "waiting_permission" || w.Permission == nil || w.Permission.ToolName != "Bash" || string(w.Permission.Input) != `{"command":"rm -rf build"}` {
		t.Fatalf("wait_for_agent: got %+v, want waiting_permission for Bash rm -rf build", w)
	}
	var pending api.PermissionsResult
	mustCall(t, m, "list_pending_permissions", nil, &pending)
	if len(pending.Permissions) != 1 || pending.Permissions[0].Request.RequestID != w.Permission.RequestID || pending.Permissions[0].AgentID != "w1" {
		t.Fatalf("list_pending_permissions: got %+v, want the one request %s", pending, w.Permission.RequestID)
	}
	var st struct {
		Status   string           `json:"status"`
		Snapshot api.ManagedAgent `json:"snapshot"`
	}
	mustCall(t, m, "get_agent_status", map[string]any{"agent_id": "w1"}, &st)
	if st.Status != "waiting_permission" || len(st.Snapshot.PendingPermissions) != 1 {
		t.Errorf("get_agent_status while pending: got %s with %d requests, want waiting_permission with 1", st.Status, len(st.Snapshot.PendingPermissions))
	}
	if msg := toolError(t, m, "respond_to_permission", map[string]any{"request_id": w.Permission.RequestID, "behavior": "maybe"}); !strings.Contains(msg, "want allow or deny") {
		t.Errorf("bad behavior: got %q", msg)
	}
	mustCall(t, m, "respond_to_permission", map[string]any{"request_id": w.Permission.RequestID, "behavior": "allow",
		"updated_input": map[string]any{"command": "rm -rf build/tmp"}}, nil)
	if msg := toolError(t, m, "respond_to_permission", map[string]any{"request_id": w.Permission.RequestID, "behavior": "deny"}); !strings.Contains(msg, "already decided: allowed by manager") {
		t.Errorf("second answer: got %q, want it told the request was already allowed by the manager", msg)
	}

	w = wait(t, m, "w1")
	if w.Status != "idle" || w.Run == nil || w.Run.State != "completed" || w.LastMessage != "done: need permission please" || w.Run.CostUSD != 0.0125 {
		t.Fatalf("wait after allow: got %+v (run %+v), want idle, run completed, cost 0.0125", w, w.Run)
	}
	act := activity(t, m, "w1")
	for _, want := range []struct{ kind, sub string }{
		{"run_started", "need permission please"},
		{"note", "session sess-"},
		{"permission_requested", "asks to use Bash"},
		{"permission_resolved", "allowed by manager"},
		{"text", `permission allow: {"command":"rm -rf build/tmp"}`},
		{"tool_result", "ran "},
		{"result", "done: need permission please"},
		{"run_finished", "completed"},
	} {
		if !hasEvent(act, want.kind, want.sub) {
			t.Errorf("activity lacks a %s event with %q:\n%s", want.kind, want.sub, act.Content)
		}
	}
	if act.UpdateCount != len(act.Events) || act.Events[0].Seq != 1 {
		t.Errorf("activity: update_count %d, %d events from seq %d; want all from 1", act.UpdateCount, len(act.Events), act.Events[0].Seq)
	}
	var page api.ActivityResult
	mustCall(t, m, "get_agent_activity", map[string]any{"agent_id": "w1", "offset": 2, "limit": 3}, &page)
	if len(page.Events) != 3 || page.Events[0].Seq != 3 || page.Events[2].Seq != 5 || !strings.Contains(page.Content, "Showing events 3-5 of") {
		t.Errorf("page offset 2 limit 3: got %d events from %d, content %q", len(page.Events), page.Events[0].Seq, page.Content)
	}
	var latest api.ActivityResult
	mustCall(t, m, "get_agent_activity", map[string]any{"agent_id": "w1", "limit": 2}, &latest)
	if len(latest.Events) != 2 || latest.Events[1].Seq != int64(act.UpdateCount) || latest.Events[1].Kind != "run_finished" {
		t.Errorf("latest 2: got %+v, want the last two events", latest.Events)
	}

	// The second turn resumes the session; this time the CLI denies.
	var pr api.PromptResult
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "w1", "prompt": "need permission again"}, &pr)
	if pr.Run != 2 || pr.Queued {
		t.Errorf("send_agent_prompt: got %+v, want run 2 started at once", pr)
	}
	w = wait(t, m, "w1")
	if w.Permission == nil {
		t.Fatalf("second turn: got %+v, want a permission request", w)
	}
	var cli api.PermissionsResult
	e.MustJSON(&cli, "permissions")
	if len(cli.Permissions) != 1 || cli.Permissions[0].Request.RequestID != w.Permission.RequestID {
		t.Fatalf("parley permissions: got %+v, want %s", cli, w.Permission.RequestID)
	}
	if out := e.Must("deny", w.Permission.RequestID, "--message", "not now"); !strings.Contains(out, "denied") {
		t.Errorf("parley deny: got %q", out)
	}
	if _, errs, code := e.Run("allow", w.Permission.RequestID); code == 0 || !strings.Contains(errs, "already decided: denied by cli") {
		t.Errorf("parley allow after deny: exit %d, %q; want it told the request was already denied", code, errs)
	}
	w = wait(t, m, "w1")
	act = activity(t, m, "w1")
	if w.Status != "idle" || !hasEvent(act, "text", "permission deny: not now") || !hasEvent(act, "permission_resolved", "denied by cli: not now") {
		t.Errorf("after CLI deny: status %s, activity:\n%s", w.Status, act.Content)
	}
	// The session id is read now: while the first permission was pending,
	// the run's init line may not have been parsed yet.
	mustCall(t, m, "get_agent_status", map[string]any{"agent_id": "w1"}, &st)
	runs := e.fakeRuns()
	if len(runs) != 2 || runs[0]["resume"] != "" || runs[1]["resume"] != st.Snapshot.SessionID || runs[1]["mode"] != "default" || runs[1]["cwd"] != dir {
		t.Errorf("fake runs: got %v, want the second to resume session %q in %s", runs, st.Snapshot.SessionID, dir)
	}
	if st.Snapshot.Runs != 2 || st.Snapshot.CostUSD != 0.025 {
		t.Errorf("status: got %d runs, cost %v; want 2 runs, cost 0.025", st.Snapshot.Runs, st.Snapshot.CostUSD)
	}
	// The CLI reads the same agent.
	var show api.ManagedAgentDetail
	e.MustJSON(&show, "agent", "show", "w1")
	if show.Status != "idle" || len(show.RecentRuns) != 2 || show.RecentRuns[0].Seq != 2 || show.RecentRuns[0].State != "completed" {
		t.Errorf("parley agent show: got %+v", show)
	}
}

// TestQueueCancelKill queues prompts behind a run, cancels the run (SIGINT,
// and SIGKILL for a process that ignores it), and kills the agent: a
// provider with one process per turn (steer = false), where prompts queue.
func TestQueueCancelKill(t *testing.T) {
	e := newEnv(t, "cancel_grace = \"1s\"\n")
	var progress atomic.Int32
	m := e.Session(&mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) }},
		"--agent", "boss", "--profile", "manager")
	dir := t.TempDir()
	mustCall(t, m, "create_agent", map[string]any{"provider": "perturn", "cwd": dir, "prompt": "sleep 30", "name": "q"}, nil)
	eventually(t, "the first run to sleep", sleeping(t, m, "q"))

	for i, p := range []string{"second", "third"} {
		var pr api.PromptResult
		mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "q", "prompt": p}, &pr)
		if !pr.Queued || pr.Run != i+2 || pr.Status != "running" {
			t.Errorf("prompt %q: got %+v, want queued as run %d", p, pr, i+2)
		}
	}
	var c api.SuccessResult
	mustCall(t, m, "cancel_agent", map[string]any{"agent_id": "q"}, &c)
	if !c.Success || !strings.Contains(c.Message, "run 1 cancelled") {
		t.Errorf("cancel_agent: got %+v", c)
	}
	// Queued prompts run in order after the cancelled one.
	eventually(t, "three runs to end", func() bool {
		var show api.ManagedAgentDetail
		e.MustJSON(&show, "agent", "show", "q")
		return show.Status == "idle" && len(show.RecentRuns) == 3 && show.RecentRuns[0].State == "completed"
	})
	var show api.ManagedAgentDetail
	e.MustJSON(&show, "agent", "show", "q")
	for i, want := range []struct{ state, prompt string }{{"completed", "third"}, {"completed", "second"}, {"cancelled", "sleep 30"}} {
		if r := show.RecentRuns[i]; r.State != want.state || r.Prompt != want.prompt {
			t.Errorf("run %d: got %s %q, want %s %q", r.Seq, r.State, r.Prompt, want.state, want.prompt)
		}
	}
	if runs := e.fakeRuns(); len(runs) != 3 {
		t.Errorf("fake ran %d times, want 3", len(runs))
	}
	act := activity(t, m, "q")
	if !hasEvent(act, "run_finished", "cancelled") {
		t.Errorf("no cancelled run in the timeline:\n%s", act.Content)
	}

	// wait_for_agent sends progress while a run goes on.
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "q", "prompt": "sleep 1"}, nil)
	params := &mcp.CallToolParams{Name: "wait_for_agent", Arguments: map[string]any{"agent_id": "q", "timeout": 60}}
	params.SetProgressToken("tok")
	res, err := m.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("wait_for_agent with progress: %v %v", err, res)
	}
	if progress.Load() == 0 {
		t.Errorf("wait_for_agent sent no progress notification over a 1 s run (every 200ms)")
	}

	// A process that ignores SIGINT is killed after the grace period.
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "q", "prompt": "sleep 30 ignore interrupt"}, nil)
	eventually(t, "the stubborn run to sleep", func() bool {
		a := activity(t, m, "q")
		return strings.Count(a.Content, "sleeping 30s") == 2
	})
	out := e.Must("agent", "cancel", "q")
	if !strings.Contains(out, "cancelled") {
		t.Errorf("parley agent cancel: got %q", out)
	}
	var st struct{ Snapshot api.ManagedAgent }
	mustCall(t, m, "get_agent_status", map[string]any{"agent_id": "q"}, &st)
	if st.Snapshot.Status != "idle" || st.Snapshot.CurrentRun != nil {
		t.Errorf("after cancelling a stubborn run: got %+v, want idle", st.Snapshot)
	}
	mustCall(t, m, "cancel_agent", map[string]any{"agent_id": "q"}, &c)
	if c.Success {
		t.Errorf("cancel with no run: got success, want false")
	}

	// Kill ends the run and the agent, and drops the queue.
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "q", "prompt": "sleep 30"}, nil)
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "q", "prompt": "never runs"}, nil)
	eventually(t, "the run to sleep", func() bool { return strings.Count(activity(t, m, "q").Content, "sleeping 30s") == 3 })
	mustCall(t, m, "kill_agent", map[string]any{"agent_id": "q"}, &c)
	if !c.Success || c.Status != "exited" {
		t.Errorf("kill_agent: got %+v, want exited", c)
	}
	if msg := toolError(t, m, "send_agent_prompt", map[string]any{"agent_id": "q", "prompt": "hello?"}); !strings.Contains(msg, "was killed") {
		t.Errorf("prompt after kill: got %q", msg)
	}
	e.MustJSON(&show, "agent", "show", "q")
	if show.Status != "exited" || show.RecentRuns[0].State != "cancelled" || show.RecentRuns[1].State != "killed" {
		t.Errorf("after kill: got %s, runs %+v %+v; want exited, queued cancelled, running killed", show.Status, show.RecentRuns[0], show.RecentRuns[1])
	}
	if n := len(e.fakeRuns()); n != 6 {
		t.Errorf("fake ran %d times, want 6 (the dropped prompt never ran)", n)
	}
	for i := range 6 {
		if !e.gone(i) {
			t.Errorf("the process of run %d still runs", i+1)
		}
	}
}

// TestAutoWake sends messages to managed agents: an idle one starts a turn
// with the message (and answers through its own native MCP server), one
// created with auto_wake=false does not, and a busy one gets its mail after
// the run, critical first: w runs one process per turn (steer = false),
// where mail cannot go into a run in progress (TestSteerMail has the default).
func TestAutoWake(t *testing.T) {
	e := newEnv(t, "")
	m := e.manager()
	alice := e.Session(nil, "--agent", "alice")
	dir := t.TempDir()
	mustCall(t, m, "create_agent", map[string]any{"provider": "perturn", "cwd": dir, "name": "w"}, nil)
	mustCall(t, m, "create_agent", map[string]any{"cwd": dir, "name": "quiet", "auto_wake": false}, nil)

	mustCall(t, alice, "send_message", map[string]any{"to": "quiet", "content": "send to alice: should not"}, nil)
	var sent api.SendResult
	mustCall(t, alice, "send_message", map[string]any{"to": "w", "content": "send to alice: pong", "priority": "high"}, &sent)
	var got api.WaitResult
	mustCall(t, alice, "wait_for_message", map[string]any{"timeout": 60}, &got)
	if got.Message == nil || got.Message.From != "w" || got.Message.Content != "pong" {
		t.Fatalf("alice got %+v, want pong from w", got.Message)
	}
	w := wait(t, m, "w")
	act := activity(t, m, "w")
	if w.Run == nil || w.Run.Source != "message" || !hasEvent(act, "run_started", "From: alice") || !hasEvent(act, "run_started", "Priority: high") {
		t.Errorf("woken run: got %+v, activity:\n%s", w.Run, act.Content)
	}
	// The managed turn is how the message reached w.
	var st api.MessageStatusResult
	mustCall(t, alice, "message_status", map[string]any{"message_id": sent.MessageID}, &st)
	if len(st.Recipients) != 1 || st.Recipients[0].WakePath != "managed" {
		t.Errorf("message_status: got %+v, want w's copy woken by a managed turn", st.Recipients)
	}
	var quiet struct{ Snapshot api.ManagedAgent }
	mustCall(t, m, "get_agent_status", map[string]any{"agent_id": "quiet"}, &quiet)
	if quiet.Snapshot.Runs != 0 || quiet.Snapshot.Status != "idle" {
		t.Errorf("auto_wake=false agent: got %d runs, %s; want 0, idle", quiet.Snapshot.Runs, quiet.Snapshot.Status)
	}

	// Mail that arrives during a run waits for it, then goes in one turn,
	// most urgent first.
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "w", "prompt": "sleep 2"}, nil)
	eventually(t, "w to sleep", sleeping(t, m, "w"))
	mustCall(t, alice, "send_message", map[string]any{"to": "w", "content": "send to alice: low-one", "priority": "low"}, nil)
	mustCall(t, alice, "send_message", map[string]any{"to": "w", "content": "send to alice: crit-one", "priority": "critical"}, nil)
	mustCall(t, alice, "wait_for_message", map[string]any{"timeout": 60}, &got)
	if got.Message == nil || got.Message.Content != "crit-one" {
		t.Fatalf("alice got %+v, want crit-one (the critical message first)", got.Message)
	}
	act = activity(t, m, "w")
	var prompt string
	for _, ev := range act.Events {
		if ev.Kind == "run_started" && strings.Contains(ev.Text, "crit-one") {
			prompt = ev.Text
		}
	}
	if ci, li := strings.Index(prompt, "crit-one"), strings.Index(prompt, "low-one"); ci < 0 || li < 0 || ci > li || !strings.Contains(prompt, "2 new messages") {
		t.Errorf("wake prompt: want both messages, critical first:\n%s", prompt)
	}
}

// TestWorktreeAndSetBranch creates an agent in a git worktree of a real
// repository and has it rename its branch; set_branch refuses elsewhere.
func TestWorktreeAndSetBranch(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is not installed")
		}
		t.Skip("git is not installed")
	}
	e := newEnv(t, "")
	m := e.manager()
	repo := t.TempDir()
	gitRun := func(dir string, args ...string) string {
		t.Helper()
		c := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	gitRun(repo, "init", "-q", "-b", "main")
	os.MkdirAll(filepath.Join(repo, "sub"), 0o755)
	os.WriteFile(filepath.Join(repo, "sub", "f.txt"), []byte("x"), 0o644)
	gitRun(repo, "add", ".")
	gitRun(repo, "commit", "-q", "-m", "init")

	var a api.ManagedAgent
	mustCall(t, m, "create_agent", map[string]any{"cwd": filepath.Join(repo, "sub"), "worktree": true, "name": "wt", "prompt": "set branch feature/x"}, &a)
	wantTop := filepath.Join(e.home, "worktrees", "wt")
	if a.Worktree != wantTop || a.Branch != "parley/wt" || a.Cwd != filepath.Join(wantTop, "sub") {
		t.Fatalf("create with worktree: got worktree %q branch %q cwd %q; want %s, parley/wt, its sub", a.Worktree, a.Branch, a.Cwd, wantTop)
	}
	wait(t, m, "wt")
	var st struct{ Snapshot api.ManagedAgent }
	mustCall(t, m, "get_agent_status", map[string]any{"agent_id": "wt"}, &st)
	if st.Snapshot.Branch != "feature/x" {
		t.Errorf("branch after set_branch: got %q, want feature/x\n%s", st.Snapshot.Branch, activity(t, m, "wt").Content)
	}
	if got := gitRun(wantTop, "rev-parse", "--abbrev-ref", "HEAD"); got != "feature/x" {
		t.Errorf("worktree HEAD: got %q, want feature/x", got)
	}
	if got := gitRun(repo, "branch", "--list", "parley/wt"); got != "" {
		t.Errorf("old branch still there: %q", got)
	}
	if runs := e.fakeRuns(); len(runs) != 1 || runs[0]["cwd"] != a.Cwd {
		t.Errorf("the agent ran in %v, want %s", runs, a.Cwd)
	}

	mustCall(t, m, "create_agent", map[string]any{"cwd": repo, "name": "plain", "prompt": "set branch nope"}, nil)
	wait(t, m, "plain")
	if act := activity(t, m, "plain"); !hasEvent(act, "text", "set_branch failed") || !hasEvent(act, "text", "Parley did not make") {
		t.Errorf("set_branch outside a Parley worktree should be refused:\n%s", act.Content)
	}
	if got := gitRun(repo, "rev-parse", "--abbrev-ref", "HEAD"); got != "main" {
		t.Errorf("repository HEAD: got %q, want main", got)
	}
	if msg := toolError(t, m, "create_agent", map[string]any{"cwd": t.TempDir(), "worktree": true, "prompt": "x"}); !strings.Contains(msg, "git repository") {
		t.Errorf("worktree outside git: got %q", msg)
	}
}

// TestDaemonRestartMidRun kills the daemon with SIGKILL during a run: after a
// restart the run is marked interrupted, the queued prompt runs, and the agent
// resumes its session for new prompts. The agent runs one process per turn
// (steer = false), where a prompt sent during a run queues.
func TestDaemonRestartMidRun(t *testing.T) {
	e := newEnv(t, "")
	m := e.manager()
	mustCall(t, m, "create_agent", map[string]any{"provider": "perturn", "cwd": t.TempDir(), "name": "r", "prompt": "sleep 60"}, nil)
	eventually(t, "the run to sleep", sleeping(t, m, "r"))
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "r", "prompt": "queued before the crash"}, nil)

	var pid struct{ PID int }
	b, err := os.ReadFile(filepath.Join(e.home, "parley.pid"))
	if err != nil || json.Unmarshal(b, &pid) != nil {
		t.Fatalf("read pid file: %v %s", err, b)
	}
	if err := proc.Kill(pid.PID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the daemon to die", func() bool { return !proc.Alive(pid.PID) })
	e.Must("daemon", "start")

	// The new daemon killed the run's orphaned process group.
	eventually(t, "the orphaned run to be killed", func() bool { return e.gone(0) })
	var res api.WaitAgentResult
	e.MustJSON(&res, "agent", "wait", "r", "--timeout", "60s")
	if res.Status != "idle" || res.Run == nil || res.Run.Seq != 2 || res.Run.State != "completed" || res.LastMessage != "done: queued before the crash" {
		t.Fatalf("after restart: got %+v (run %+v), want the queued run 2 completed", res, res.Run)
	}
	var show api.ManagedAgentDetail
	e.MustJSON(&show, "agent", "show", "r")
	if len(show.RecentRuns) != 2 || show.RecentRuns[1].State != "interrupted" || !strings.Contains(show.RecentRuns[1].Error, "daemon stopped") {
		t.Errorf("the in-flight run: got %+v, want interrupted", show.RecentRuns)
	}
	var logs api.ActivityResult
	e.MustJSON(&logs, "agent", "logs", "r", "--offset", "0", "--limit", "1000")
	if !hasEvent(logs, "interrupted", "interrupted") {
		t.Errorf("timeline lacks the interruption:\n%s", logs.Content)
	}
	e.Must("agent", "prompt", "r", "after the restart")
	e.MustJSON(&res, "agent", "wait", "r")
	runs := e.fakeRuns()
	if res.Run == nil || res.Run.Seq != 3 || res.Run.State != "completed" || len(runs) != 3 || runs[2]["resume"] != show.SessionID || show.SessionID == "" {
		t.Errorf("prompt after restart: got %+v, fake runs %v; want run 3 resuming %q", res.Run, runs, show.SessionID)
	}
}

// TestCommandProvider runs command-template agents: one whose output is
// Claude stream-json (the fake, reading its prompt on stdin), one plain.
func TestCommandProvider(t *testing.T) {
	e := newEnv(t, "")
	m := e.manager()
	dir := t.TempDir()
	mustCall(t, m, "create_agent", map[string]any{"provider": "command", "command": fake, "cwd": dir, "name": "c1", "prompt": "hello via command"}, nil)
	if w := wait(t, m, "c1"); w.LastMessage != "done: hello via command" || w.Run.CostUSD != 0.0125 {
		t.Errorf("stream-json through command: got %+v", w)
	}
	mustCall(t, m, "create_agent", map[string]any{"provider": "command", "command": `echo "stdin: $(cat)"; echo arg: {prompt}`, "cwd": dir, "name": "c2", "prompt": "it's $HOME"}, nil)
	w := wait(t, m, "c2")
	act := activity(t, m, "c2")
	if w.LastMessage != "arg: it's $HOME" || !hasEvent(act, "text", "stdin: it's $HOME") {
		t.Errorf("plain command: got %q, activity:\n%s", w.LastMessage, act.Content)
	}
	mustCall(t, m, "create_agent", map[string]any{"provider": "command", "command": "echo oops >&2; exit 3", "cwd": dir, "name": "c3", "prompt": "x"}, nil)
	w = wait(t, m, "c3")
	if w.Status != "error" || w.Run.State != "failed" || !strings.Contains(w.Run.Error, "exit status 3: oops") {
		t.Errorf("failing command: got status %s, run %+v", w.Status, w.Run)
	}
	// The agent stays usable after a failure.
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "c3", "prompt": "again"}, nil)
	if w := wait(t, m, "c3"); w.Run.Seq != 2 {
		t.Errorf("prompt after failure: got run %+v", w.Run)
	}
	var list api.ManagedAgentsResult
	mustCall(t, m, "list_agents", nil, &list)
	if list.Count != 3 || list.Agents[0].AgentID != "c1" || list.Agents[2].AgentID != "c3" {
		t.Errorf("list_agents: got %+v", list)
	}
	// Another workspace sees none of them.
	other := e.Session(nil, "--agent", "boss2", "--profile", "manager", "--workspace", "elsewhere")
	mustCall(t, other, "list_agents", nil, &list)
	if list.Count != 0 {
		t.Errorf("list_agents in another workspace: got %d agents, want 0", list.Count)
	}
	if msg := toolError(t, other, "get_agent_status", map[string]any{"agent_id": "c1"}); !strings.Contains(msg, "no managed agent") {
		t.Errorf("status across workspaces: got %q", msg)
	}
}

// TestCLI drives a command agent through the CLI alone.
func TestCLI(t *testing.T) {
	e := newEnv(t, "")
	dir := t.TempDir()
	var a api.ManagedAgent
	e.MustJSON(&a, "agent", "create", "--provider", "command", "--command", "echo got {prompt}", "--cwd", dir, "--name", "cli1", "--title", "from the CLI", "first", "turn")
	if a.AgentID != "cli1" || a.Title != "from the CLI" || a.Provider != "command" {
		t.Fatalf("agent create: got %+v", a)
	}
	var w api.WaitAgentResult
	e.MustJSON(&w, "agent", "wait", "cli1")
	if w.LastMessage != "got first turn" {
		t.Errorf("agent wait: got %+v, want last message %q", w, "got first turn")
	}
	var list api.ManagedAgentsResult
	e.MustJSON(&list, "agent", "list")
	if list.Count != 1 || list.Agents[0].AgentID != "cli1" || list.Agents[0].Status != "idle" {
		t.Errorf("agent list: got %+v", list)
	}
	if out := e.Must("agent", "list"); !strings.Contains(out, "cli1") || !strings.Contains(out, "from the CLI") {
		t.Errorf("agent list text: got %q", out)
	}
	if out := e.Must("agent", "mode", "cli1", "acceptEdits"); !strings.Contains(out, "acceptEdits") {
		t.Errorf("agent mode: got %q", out)
	}
	if _, errs, code := e.Run("agent", "mode", "cli1", "nope"); code != 2 || !strings.Contains(errs, "invalid mode") {
		t.Errorf("agent mode nope: exit %d, %q", code, errs)
	}
	if _, errs, code := e.Run("agent", "wait", "ghost"); code == 0 || !strings.Contains(errs, "no managed agent") {
		t.Errorf("agent wait ghost: exit %d, %q", code, errs)
	}
	if out := e.Must("agent", "logs", "cli1"); !strings.Contains(out, "assistant: got first turn") {
		t.Errorf("agent logs: got %q", out)
	}
	if out := e.Must("agent", "kill", "cli1"); !strings.Contains(out, "exited") {
		t.Errorf("agent kill: got %q", out)
	}
	if _, errs, code := e.Run("agent", "prompt", "cli1", "more"); code == 0 || !strings.Contains(errs, "was killed") {
		t.Errorf("prompt a killed agent: exit %d, %q", code, errs)
	}
	// A managed agent is an agent of the bus, too.
	var bus api.ListAgentsResult
	e.MustJSON(&bus, "agents")
	if len(bus.Agents) != 1 || bus.Agents[0].Name != "cli1" {
		t.Errorf("parley agents: got %+v, want cli1", bus.Agents)
	}
}

// TestCreateErrors: bad input gets a clear error and creates nothing.
func TestCreateErrors(t *testing.T) {
	e := newEnv(t, "[providers.codex]\ncommand = \"no-such-codex\"\n")
	m := e.manager()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"missing executable", map[string]any{"provider": "codex", "cwd": dir}, `executable "no-such-codex" not found`},
		{"unknown provider", map[string]any{"provider": "gemini", "cwd": dir}, "unknown provider"},
		{"relative cwd", map[string]any{"cwd": "src"}, "absolute"},
		{"missing cwd", map[string]any{"cwd": filepath.Join(dir, "nope")}, "not a directory"},
		{"bad mode", map[string]any{"cwd": dir, "mode": "yolo"}, "invalid mode"},
		{"command without command", map[string]any{"provider": "command", "cwd": dir}, "needs a command"},
		{"command for claude", map[string]any{"cwd": dir, "command": "ls"}, "only for command providers"},
		{"bad name", map[string]any{"cwd": dir, "name": "no spaces"}, "invalid agent name"},
		{"taken name", map[string]any{"cwd": dir, "name": "boss"}, "already exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if msg := toolError(t, m, "create_agent", tc.args); !strings.Contains(msg, tc.want) {
				t.Errorf("got %q, want it to contain %q", msg, tc.want)
			}
		})
	}
	var list api.ManagedAgentsResult
	mustCall(t, m, "list_agents", nil, &list)
	if list.Count != 0 {
		t.Errorf("after bad creates: %d agents, want 0", list.Count)
	}
	if _, errs, code := e.Run("agent", "create", "--mode", "yolo", "x"); code != 2 || !strings.Contains(errs, "invalid mode") {
		t.Errorf("parley agent create --mode yolo: exit %d, %q; want 2 and invalid mode", code, errs)
	}
	if msg := toolError(t, m, "get_agent_activity", map[string]any{"agent_id": "nobody"}); !strings.Contains(msg, "no managed agent") {
		t.Errorf("activity of nobody: got %q", msg)
	}
	// The self profile is for managed agents only.
	self := e.Session(nil, "--agent", "outsider", "--profile", "self")
	if msg := toolError(t, self, "request_permission", map[string]any{"tool_name": "Bash", "input": map[string]any{}}); !strings.Contains(msg, "agents Parley launched") {
		t.Errorf("request_permission from a non-managed agent: got %q", msg)
	}
	if msg := toolError(t, self, "set_title", map[string]any{"title": "x"}); !strings.Contains(msg, "agents Parley launched") {
		t.Errorf("set_title from a non-managed agent: got %q", msg)
	}
}

// TestPermissionTimeout: an unanswered request is denied after
// permission_timeout, and set_title works from inside a run.
func TestPermissionTimeout(t *testing.T) {
	e := newEnv(t, "permission_timeout = \"1s\"\n")
	m := e.manager()
	mustCall(t, m, "create_agent", map[string]any{"cwd": t.TempDir(), "name": "p", "prompt": "need permission\nset title renamed by itself"}, nil)
	var w api.WaitAgentResult
	for {
		w = wait(t, m, "p")
		if w.Permission == nil {
			break
		}
	}
	act := activity(t, m, "p")
	if !hasEvent(act, "text", "permission deny: no answer within 1s: denied") || !hasEvent(act, "permission_resolved", "denied by timeout") {
		t.Errorf("timeout: activity:\n%s", act.Content)
	}
	var st struct{ Snapshot api.ManagedAgent }
	mustCall(t, m, "get_agent_status", map[string]any{"agent_id": "p"}, &st)
	if st.Snapshot.Title != "renamed by itself" {
		t.Errorf("title: got %q, want the one set_title gave", st.Snapshot.Title)
	}
	var mr api.ModeResult
	mustCall(t, m, "set_agent_mode", map[string]any{"agent_id": "p", "mode": "plan"}, &mr)
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "p", "prompt": "planning"}, nil)
	wait(t, m, "p")
	if runs := e.fakeRuns(); len(runs) != 2 || runs[1]["mode"] != "plan" {
		t.Errorf("mode after set_agent_mode: got %v, want plan", runs)
	}
}

// TestManagedDeliverModes: a managed agent follows its mail's delivery
// mode: a message that queues (low priority) starts no turn; one that
// interrupts stops the turn in progress, and the next turn carries it.
func TestManagedDeliverModes(t *testing.T) {
	e := newEnv(t, "")
	m := e.manager()
	alice := e.Session(nil, "--agent", "alice")
	dir := t.TempDir()
	mustCall(t, m, "create_agent", map[string]any{"provider": "perturn", "cwd": dir, "name": "w"}, nil)

	mustCall(t, alice, "send_message", map[string]any{"to": "w", "content": "send to alice: fyi", "priority": "low"}, nil)
	// A normal message after it wakes w: the one turn carries both, so the
	// low one started none of its own.
	mustCall(t, alice, "send_message", map[string]any{"to": "w", "content": "send to alice: now-both"}, nil)
	var got api.WaitResult
	mustCall(t, alice, "wait_for_message", map[string]any{"timeout": 60}, &got)
	if got.Message == nil || got.Message.Content != "now-both" {
		t.Fatalf("alice got %+v, want now-both", got.Message)
	}
	var runs int
	for _, ev := range activity(t, m, "w").Events {
		if ev.Kind == "run_started" {
			runs++
			if !strings.Contains(ev.Text, "fyi") || !strings.Contains(ev.Text, "now-both") {
				t.Errorf("the woken turn: want both messages:\n%s", ev.Text)
			}
		}
	}
	if runs != 1 {
		t.Errorf("runs: got %d, want 1 (a queued message starts none)", runs)
	}

	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "w", "prompt": "sleep 30"}, nil)
	eventually(t, "w to sleep", sleeping(t, m, "w"))
	mustCall(t, alice, "send_message", map[string]any{"to": "w", "content": "send to alice: stop-it", "deliver": "interrupt"}, nil)
	start := time.Now()
	mustCall(t, alice, "wait_for_message", map[string]any{"timeout": 60}, &got)
	if got.Message == nil || got.Message.Content != "stop-it" {
		t.Fatalf("alice got %+v, want stop-it", got.Message)
	}
	if d := time.Since(start); d > 25*time.Second {
		t.Errorf("the interrupt took %s: the 30 s turn was not stopped", d)
	}
	var show struct {
		RecentRuns []struct{ State, Source string } `json:"recent_runs"`
	}
	e.MustJSON(&show, "agent", "show", "w")
	cancelled := false
	for _, r := range show.RecentRuns {
		cancelled = cancelled || r.State == "cancelled"
	}
	if !cancelled {
		t.Errorf("no cancelled run after an interrupt: %+v", show.RecentRuns)
	}
}
