package runner_test

// End-to-end tests of managed agents: the real parley binary runs a real
// daemon in a temporary PARLEY_HOME; a go-sdk client drives the manager
// profile through `parley mcp serve`; the agents are the real Claude Code
// and Codex CLIs (scripts/test-deps installs them under test/npm) with only
// the model replaced by a scripted stand-in (internal/testenv/standin), or
// command providers.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/proc"
	"github.com/parley-dev/parley/internal/testenv"
	"github.com/parley-dev/parley/internal/testenv/standin"
)

var bin string

func TestMain(m *testing.M) {
	// The tests mostly wait (for the clients, the stand-ins, the daemon),
	// not for the CPU: run more at once than GOMAXPROCS, unless -parallel
	// says otherwise.
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", "4")
	}
	var err error
	if bin, err = testenv.Binary(testenv.Parley, buildFlags...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

const ws = "rt"

// env is one Parley installation with its daemon.
type env struct {
	*testenv.Env
	t                 testing.TB
	home              string
	clients           string // the real clients' state: HOME, CLAUDE_CONFIG_DIR, CODEX_HOME
	anthropic, openai *standin.Server
}

// opts configure newEnv; zero values mean none.
type opts struct {
	config    string          // more of config.toml
	anthropic *standin.Server // the model of the claude and perturn providers
	openai    *standin.Server // the model of the codex and codexsteer providers
	daemonEnv []string        // more environment for the daemon alone
}

// newEnv starts a Parley installation whose providers (standin.Providers)
// run the real CLIs against the stand-ins given.
func newEnv(t testing.TB, o opts) *env {
	t.Helper()
	clients := t.TempDir()
	te := testenv.New(t, bin, &testenv.Options{Prefix: "pl",
		Config: o.config + "\n" + standin.Providers(t, o.anthropic, o.openai, clients),
		Env:    []string{"PARLEY_WORKSPACE=" + ws, "PARLEY_PROGRESS_EVERY=200ms"}})
	c := te.Cmd("daemon", "start")
	c.Env = append(c.Env, o.daemonEnv...)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("parley daemon start: %v\n%s", err, out)
	}
	return &env{Env: te, t: t, home: te.Home, clients: clients, anthropic: o.anthropic, openai: o.openai}
}

func (e *env) manager() *mcp.ClientSession {
	return e.Session(nil, "--agent", "boss", "--profile", "manager")
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

// hold waits until open is closed or the client that asked goes away: a
// model that takes its time.
func hold(q standin.Query, open <-chan struct{}) {
	select {
	case <-open:
	case <-q.Context().Done():
	}
}

// turnClients are the providers the client-neutral tests run on: Claude
// Code and codex exec, each one process per turn.
var turnClients = []string{"perturn", "codex"}

// forClients runs test once per provider of turnClients, in parallel, each
// in an installation of its own whose model is script (standin.Both).
func forClients(t *testing.T, config string, script func(standin.Query) *standin.Turn, test func(t *testing.T, e *env, provider string)) {
	t.Parallel()
	for _, provider := range turnClients {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			o := opts{config: config}
			anthropic, openai := standin.Both(t, script)
			if provider == "codex" {
				o.openai = openai
			} else {
				o.anthropic = anthropic
			}
			test(t, newEnv(t, o), provider)
		})
	}
}

// gated is a gate (see gate): the channel a reply waits on, and its opener.
type gated struct {
	open    <-chan struct{}
	release func()
}

// gates are a gate per provider of turnClients, for a script that
// forClients shares between them: the prompt names the provider.
func gates(t *testing.T) map[string]gated {
	m := map[string]gated{}
	for _, p := range turnClients {
		open, release := gate(t)
		m[p] = gated{open, release}
	}
	return m
}

// asked returns a condition: the model was asked sub, by some client.
func (e *env) asked(sub string) func() bool {
	return func() bool {
		for _, s := range []*standin.Server{e.anthropic, e.openai} {
			if s != nil && s.Saw(sub) {
				return true
			}
		}
		return false
	}
}

// gone returns a condition: no process of the agent's runs and sessions is
// left, neither one that carries their marker nor one in the process groups
// those had when gone was called (what the client started: its MCP servers,
// its tools).
func (e *env) gone(t *testing.T, agent string) func() bool {
	needProc(t)
	groups := map[int]bool{}
	for _, p := range e.agentProcs(agent) {
		groups[p.pgid] = true
	}
	return func() bool { return len(e.agentProcs(agent)) == 0 && !groupsAlive(groups) }
}

// TestQueueCancelKill queues prompts behind a run, cancels the run (SIGINT,
// and SIGKILL for a client that answers nothing, here stopped), and kills
// the agent, with each client run once per turn, where prompts queue.
func TestQueueCancelKill(t *testing.T) {
	slow := gates(t)
	forClients(t, "cancel_grace = \"1s\"\n", func(q standin.Query) *standin.Turn {
		tail := q.Tail()
		// A cancelled turn's prompt stays in the tail (Codex): the prompts
		// that come after a cancel are looked for first.
		switch {
		case strings.Contains(tail, "second task"):
			return standin.Say("DONE second")
		case strings.Contains(tail, "third task"):
			return standin.Say("DONE third")
		case strings.Contains(tail, "SLOW"):
			hold(q, slow[strings.Fields(tail[strings.Index(tail, "SLOW"):])[1]].open)
			return standin.Say("DONE slow")
		case strings.Contains(tail, "HANG"):
			hold(q, nil)
		}
		return nil
	}, func(t *testing.T, e *env, provider string) {
		var progress atomic.Int32
		m := e.Session(&mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) }},
			"--agent", "boss", "--profile", "manager")
		mustCall(t, m, "create_agent", map[string]any{"provider": provider, "cwd": t.TempDir(), "prompt": "HANG first", "name": "q"}, nil)
		eventually(t, "the model is asked the first task", e.asked("HANG first"))
		for i, p := range []string{"second task", "third task"} {
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
		var show api.ManagedAgentDetail
		eventually(t, "three runs to end", func() bool {
			e.MustJSON(&show, "agent", "show", "q")
			return show.Status == "idle" && len(show.RecentRuns) == 3 && show.RecentRuns[0].State == "completed"
		})
		for i, want := range []struct{ state, prompt, last string }{{"completed", "third task", "DONE third"}, {"completed", "second task", "DONE second"}, {"cancelled", "HANG first", ""}} {
			if r := show.RecentRuns[i]; r.State != want.state || r.Prompt != want.prompt || r.LastMessage != want.last {
				t.Errorf("run %d: got %s %q answered %q, want %s %q answered %q", r.Seq, r.State, r.Prompt, r.LastMessage, want.state, want.prompt, want.last)
			}
		}
		eventually(t, "the processes of every run to end", e.gone(t, "q"))
		if act := activity(t, m, "q"); !hasEvent(act, "run_finished", "cancelled") {
			t.Errorf("no cancelled run in the timeline:\n%s", act.Content)
		}

		// wait_for_agent sends progress while a run goes on.
		var pr api.PromptResult
		mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "q", "prompt": "SLOW " + provider}, &pr)
		params := &mcp.CallToolParams{Name: "wait_for_agent", Arguments: map[string]any{"agent_id": "q", "timeout": 1}}
		params.SetProgressToken("tok")
		res, err := m.CallTool(context.Background(), params)
		if err != nil || res.IsError {
			t.Fatalf("wait_for_agent with progress: %v %v", err, res)
		}
		if progress.Load() == 0 {
			t.Errorf("wait_for_agent sent no progress notification over 1 s of a run (every 200ms)")
		}
		slow[provider].release()
		if w := waitRun(t, m, "q", pr.Run); w.LastMessage != "DONE slow" {
			t.Errorf("the slow run: got %q", w.LastMessage)
		}

		// A client that answers nothing (stopped) is killed after the grace.
		mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "q", "prompt": "HANG stubborn"}, &pr)
		eventually(t, "the model is asked the stubborn task", e.asked("HANG stubborn"))
		pause(t, e.leader(t, "q").pgid)
		if out := e.Must("agent", "cancel", "q"); !strings.Contains(out, "cancelled") {
			t.Errorf("parley agent cancel: got %q", out)
		}
		var st struct{ Snapshot api.ManagedAgent }
		mustCall(t, m, "get_agent_status", map[string]any{"agent_id": "q"}, &st)
		if st.Snapshot.Status != "idle" || st.Snapshot.CurrentRun != nil {
			t.Errorf("after cancelling a stopped client: got %+v, want idle", st.Snapshot)
		}
		eventually(t, "the stopped client to be killed", e.gone(t, "q"))
		mustCall(t, m, "cancel_agent", map[string]any{"agent_id": "q"}, &c)
		if c.Success {
			t.Errorf("cancel with no run: got success, want false")
		}

		// Kill ends the run and the agent, and drops the queue.
		mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "q", "prompt": "HANG killed"}, nil)
		mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "q", "prompt": "DROPPED-BY-KILL"}, nil)
		eventually(t, "the model is asked the task the kill ends", e.asked("HANG killed"))
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
		eventually(t, "the killed agent's processes to end", e.gone(t, "q"))
		if e.asked("DROPPED-BY-KILL")() {
			t.Errorf("the prompt dropped by the kill reached the model")
		}
	})
}

// TestAutoWake sends messages to managed agents: an idle one starts a turn
// with the message (and answers through its own native MCP server), one
// created with auto_wake=false does not, and a busy one gets its mail after
// the run, critical first: w runs one process per turn, where mail cannot
// go into a run in progress (the steer tests have that).
func TestAutoWake(t *testing.T) {
	busy := gates(t)
	forClients(t, "", func(q standin.Query) *standin.Turn {
		tail := q.Tail()
		switch {
		case strings.Contains(tail, "crit-one"):
			return standin.Say("READ " + tail)
		case strings.Contains(tail, "BUSY"):
			hold(q, busy[strings.Fields(tail[strings.Index(tail, "BUSY"):])[1]].open)
			return standin.Say("DONE busy")
		case strings.Contains(tail, "PING-FROM-ALICE"):
			return standin.Call("call_pong", "parley", "send_message", map[string]any{"to": "alice", "content": "pong"})
		}
		if _, ok := q.Result("call_pong"); ok {
			return standin.Say("SENT")
		}
		return nil
	}, func(t *testing.T, e *env, provider string) {
		m := e.manager()
		alice := e.Session(nil, "--agent", "alice")
		dir := t.TempDir()
		mustCall(t, m, "create_agent", map[string]any{"provider": provider, "cwd": dir, "name": "w"}, nil)
		mustCall(t, m, "create_agent", map[string]any{"provider": provider, "cwd": dir, "name": "quiet", "auto_wake": false}, nil)

		mustCall(t, alice, "send_message", map[string]any{"to": "quiet", "content": "PING-FROM-ALICE, should not wake"}, nil)
		var sent api.SendResult
		mustCall(t, alice, "send_message", map[string]any{"to": "w", "content": "PING-FROM-ALICE", "priority": "high"}, &sent)
		var got api.WaitResult
		mustCall(t, alice, "wait_for_message", map[string]any{"timeout": 60}, &got)
		if got.Message == nil || got.Message.From != "w" || got.Message.Content != "pong" {
			t.Fatalf("alice got %+v, want pong from w", got.Message)
		}
		w := waitRun(t, m, "w", 1)
		act := activity(t, m, "w")
		if w.Run.Source != "message" || w.LastMessage != "SENT" || !hasEvent(act, "run_started", "From: alice") || !hasEvent(act, "run_started", "Priority: high") {
			t.Errorf("woken run: got %+v answered %q, activity:\n%s", w.Run, w.LastMessage, act.Content)
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

		// Mail that arrives during a run waits for it, then goes in one
		// turn, most urgent first.
		var pr api.PromptResult
		mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "w", "prompt": "BUSY " + provider}, &pr)
		eventually(t, "w to be busy", e.asked("BUSY "+provider))
		mustCall(t, alice, "send_message", map[string]any{"to": "w", "content": "low-one", "priority": "low"}, nil)
		mustCall(t, alice, "send_message", map[string]any{"to": "w", "content": "crit-one", "priority": "critical"}, nil)
		busy[provider].release()
		waitRun(t, m, "w", pr.Run)
		eventually(t, "the mail to wake w", func() bool {
			var st struct{ Snapshot api.ManagedAgent }
			mustCall(t, m, "get_agent_status", map[string]any{"agent_id": "w"}, &st)
			return st.Snapshot.Runs > pr.Run
		})
		w = waitRun(t, m, "w", pr.Run+1)
		if ci, li := strings.Index(w.LastMessage, "crit-one"), strings.Index(w.LastMessage, "low-one"); w.Run.Source != "message" || ci < 0 || li < 0 || ci > li || !strings.Contains(w.LastMessage, "2 new messages") {
			t.Errorf("the woken run: got %+v, want both messages in one turn, critical first; the model read:\n%s", w.Run, w.LastMessage)
		}
	})
}

var setBranch = regexp.MustCompile(`set branch (\S+)`)

// TestWorktreeAndSetBranch creates an agent in a git worktree of a real
// repository and has it rename its branch; set_branch refuses elsewhere.
func TestWorktreeAndSetBranch(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is not installed")
		}
		t.Skip("git is not installed")
	}
	s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		if out, ok := r.ToolResult("toolu_branch"); ok {
			return []standin.Block{standin.Text("RESULT " + out)}
		}
		if m := setBranch.FindStringSubmatch(r.Tail()); m != nil {
			return []standin.Block{standin.ToolUse("toolu_branch", "mcp__parley-self__set_branch", map[string]any{"branch": m[1]})}
		}
		return nil
	})
	e := newEnv(t, opts{anthropic: s})
	m := e.manager()
	repo := gitRepo(t)

	var a api.ManagedAgent
	mustCall(t, m, "create_agent", map[string]any{"provider": "perturn", "cwd": filepath.Join(repo, "src"), "worktree": true, "name": "wt", "prompt": "set branch feature/x"}, &a)
	wantTop := filepath.Join(e.home, "worktrees", "wt")
	if a.Worktree != wantTop || a.Branch != "parley/wt" || a.Cwd != filepath.Join(wantTop, "src") {
		t.Fatalf("create with worktree: got worktree %q branch %q cwd %q; want %s, parley/wt, its src", a.Worktree, a.Branch, a.Cwd, wantTop)
	}
	waitRun(t, m, "wt", 1)
	var st struct{ Snapshot api.ManagedAgent }
	mustCall(t, m, "get_agent_status", map[string]any{"agent_id": "wt"}, &st)
	if st.Snapshot.Branch != "feature/x" {
		t.Errorf("branch after set_branch: got %q, want feature/x\n%s", st.Snapshot.Branch, activity(t, m, "wt").Content)
	}
	if got := gitRun(t, wantTop, "rev-parse", "--abbrev-ref", "HEAD"); got != "feature/x" {
		t.Errorf("worktree HEAD: got %q, want feature/x", got)
	}
	if got := gitRun(t, repo, "branch", "--list", "parley/wt"); got != "" {
		t.Errorf("old branch still there: %q", got)
	}
	if !s.Saw("Primary working directory: " + a.Cwd) {
		t.Errorf("the agent did not run in %s", a.Cwd)
	}

	mustCall(t, m, "create_agent", map[string]any{"provider": "perturn", "cwd": repo, "name": "plain", "prompt": "set branch nope"}, nil)
	if w := waitRun(t, m, "plain", 1); !strings.Contains(w.LastMessage, "Parley did not make") {
		t.Errorf("set_branch outside a Parley worktree: the model read %q, want a refusal", w.LastMessage)
	}
	if got := gitRun(t, repo, "rev-parse", "--abbrev-ref", "HEAD"); got != "main" {
		t.Errorf("repository HEAD: got %q, want main", got)
	}
	if msg := toolError(t, m, "create_agent", map[string]any{"cwd": t.TempDir(), "worktree": true, "prompt": "x"}); !strings.Contains(msg, "git repository") {
		t.Errorf("worktree outside git: got %q", msg)
	}
}

// TestDaemonRestartMidRun kills the daemon with SIGKILL during a run: after a
// restart the client of the run is killed, the run is marked interrupted,
// the queued prompt runs, and the agent resumes its session for new
// prompts. The agent runs one process per turn, where a prompt sent during
// a run queues.
func TestDaemonRestartMidRun(t *testing.T) {
	forClients(t, "", func(q standin.Query) *standin.Turn {
		tail := q.Tail()
		switch {
		case strings.Contains(tail, "after the restart") && q.Has("queued before the crash"):
			return standin.Say("REMEMBERS")
		case strings.Contains(tail, "queued before the crash"):
			return standin.Say("DONE queued")
		case strings.Contains(tail, "HANG"):
			hold(q, nil)
		}
		return nil
	}, func(t *testing.T, e *env, provider string) {
		m := e.manager()
		mustCall(t, m, "create_agent", map[string]any{"provider": provider, "cwd": t.TempDir(), "name": "r", "prompt": "HANG until the crash"}, nil)
		eventually(t, "the model is asked", e.asked("HANG until the crash"))
		mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "r", "prompt": "queued before the crash"}, nil)
		orphan := e.leader(t, "r")

		var pid struct{ PID int }
		b, err := os.ReadFile(filepath.Join(e.home, "parley.pid"))
		if err != nil || json.Unmarshal(b, &pid) != nil {
			t.Fatalf("read pid file: %v %s", err, b)
		}
		if err := proc.Kill(pid.PID); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the daemon to die", func() bool { return !proc.Alive(pid.PID) })
		if len(e.agentProcs("r")) == 0 {
			t.Fatalf("the run's client died with the daemon: nothing left for the restart to clean up")
		}
		// The client's MCP servers (parley mcp serve) may start it first.
		if _, errs, code := e.Run("daemon", "start"); code != 0 && !strings.Contains(errs, "already running") {
			t.Fatalf("parley daemon start: exit %d: %s", code, errs)
		}

		// The new daemon killed the run's orphaned process group.
		eventually(t, "the orphaned run to be killed", func() bool { return !groupsAlive(map[int]bool{orphan.pgid: true}) })
		var res api.WaitAgentResult
		e.MustJSON(&res, "agent", "wait", "r", "--timeout", "60s")
		if res.Status != "idle" || res.Run == nil || res.Run.Seq != 2 || res.Run.State != "completed" || res.LastMessage != "DONE queued" {
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
		if res.Run == nil || res.Run.Seq != 3 || res.Run.State != "completed" || res.LastMessage != "REMEMBERS" {
			t.Errorf("prompt after restart: got %+v answered %q; want run 3 to resume the session (REMEMBERS)", res.Run, res.LastMessage)
		}
	})
}

// TestCommandProvider runs command-template agents: one whose output is
// Claude stream-json (the real Claude Code, reading its prompt on stdin),
// one plain.
func TestCommandProvider(t *testing.T) {
	t.Parallel()
	s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		if strings.Contains(r.Tail(), "hello via command") {
			return []standin.Block{standin.Text("DONE hello via command")}
		}
		return nil
	})
	e := newEnv(t, opts{})
	m := e.manager()
	dir := t.TempDir()
	claude := "env"
	for _, kv := range standin.ClaudeEnv(s, t.TempDir()) {
		claude += " '" + kv + "'"
	}
	claude += " '" + standin.CLI(t, "claude") + "' -p --output-format stream-json --verbose"
	mustCall(t, m, "create_agent", map[string]any{"provider": "command", "command": claude, "cwd": dir, "name": "c1", "prompt": "hello via command"}, nil)
	if w := waitRun(t, m, "c1", 1); w.LastMessage != "DONE hello via command" || w.Run.CostUSD <= 0 {
		t.Errorf("stream-json through command: got %+v (run %+v), want the answer and its cost", w, w.Run)
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
	t.Parallel()
	e := newEnv(t, opts{})
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
	t.Parallel()
	// A claude provider whose executable exists: the errors come after.
	e := newEnv(t, opts{config: "[providers.codex]\ncommand = \"no-such-codex\"\n[providers.claude]\ncommand = \"true\"\n"})
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
// permission_timeout, set_title works from inside a run, and a new mode
// starts a new client process in that mode, which resumes the session.
func TestPermissionTimeout(t *testing.T) {
	t.Parallel()
	s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		if out, ok := r.Result("toolu_py"); ok {
			return []standin.Block{standin.Text("DONE " + out)}
		}
		if _, ok := r.Result("toolu_title"); ok {
			return []standin.Block{standin.ToolUse("toolu_py", "Bash", map[string]any{"command": "python3 -c \"open('f','w')\"", "description": "write a file"})}
		}
		switch tail := r.Tail(); {
		case strings.Contains(tail, "PLANNING") && r.Has("TIMEOUT-TEST"):
			return []standin.Block{standin.Text("PLANNED, RESUMED")}
		case strings.Contains(tail, "TIMEOUT-TEST"):
			return []standin.Block{standin.ToolUse("toolu_title", "mcp__parley-self__set_title", map[string]any{"title": "renamed by itself"})}
		}
		return nil
	})
	e := newEnv(t, opts{config: "permission_timeout = \"1s\"\n", anthropic: s})
	m := e.manager()
	mustCall(t, m, "create_agent", map[string]any{"cwd": t.TempDir(), "name": "p", "prompt": "TIMEOUT-TEST"}, nil)
	w := wait(t, m, "p")
	for w.Permission != nil {
		w = wait(t, m, "p")
	}
	if w.Run == nil || w.Run.State != "completed" || !strings.Contains(w.LastMessage, "no answer within 1s: denied") {
		t.Errorf("run 1: got %+v, the model read %q; want it completed, and the timeout's denial read", w.Run, w.LastMessage)
	}
	act := activity(t, m, "p")
	if !hasEvent(act, "permission_resolved", "denied by timeout") {
		t.Errorf("timeout: activity:\n%s", act.Content)
	}
	var st struct{ Snapshot api.ManagedAgent }
	mustCall(t, m, "get_agent_status", map[string]any{"agent_id": "p"}, &st)
	if st.Snapshot.Title != "renamed by itself" {
		t.Errorf("title: got %q, want the one set_title gave", st.Snapshot.Title)
	}
	first := e.leader(t, "p")
	var mr api.ModeResult
	mustCall(t, m, "set_agent_mode", map[string]any{"agent_id": "p", "mode": "plan"}, &mr)
	var pr api.PromptResult
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "p", "prompt": "PLANNING"}, &pr)
	if w := waitRun(t, m, "p", pr.Run); w.LastMessage != "PLANNED, RESUMED" {
		t.Errorf("run %d: got %q, want the session resumed (PLANNED, RESUMED)", pr.Run, w.LastMessage)
	}
	now := e.leader(t, "p")
	if now.pid == first.pid || !strings.Contains(now.cmdline, "\x00--permission-mode\x00plan\x00") {
		t.Errorf("the client after set_agent_mode: pid %d (before %d), argv %q; want a new process in plan mode", now.pid, first.pid, now.cmdline)
	}
}

// TestManagedDeliverModes: a managed agent follows its mail's delivery
// mode: a message that queues (low priority) starts no turn, the next turn
// carries it; one that interrupts stops the turn in progress, and the turn
// its end starts carries it.
func TestManagedDeliverModes(t *testing.T) {
	t.Parallel()
	s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		tail := r.Tail()
		switch {
		case strings.Contains(tail, "HANG-HERE"):
			<-r.Context().Done() // until the client gives up: the turn is cancelled
			return nil
		case strings.Contains(tail, "now-both") || strings.Contains(tail, "stop-it"):
			return []standin.Block{standin.Text("READ " + tail)}
		}
		return nil
	})
	e := newEnv(t, opts{anthropic: s})
	m := e.manager()
	alice := e.Session(nil, "--agent", "alice")
	mustCall(t, m, "create_agent", map[string]any{"provider": "perturn", "cwd": t.TempDir(), "name": "w"}, nil)

	mustCall(t, alice, "send_message", map[string]any{"to": "w", "content": "fyi", "priority": "low"}, nil)
	mustCall(t, alice, "send_message", map[string]any{"to": "w", "content": "now-both"}, nil)
	runs := func() int {
		var st struct{ Snapshot api.ManagedAgent }
		mustCall(t, m, "get_agent_status", map[string]any{"agent_id": "w"}, &st)
		return st.Snapshot.Runs
	}
	eventually(t, "the mail to wake w", func() bool { return runs() >= 1 })
	w := waitRun(t, m, "w", 1)
	if !strings.Contains(w.LastMessage, "fyi") || !strings.Contains(w.LastMessage, "now-both") {
		t.Errorf("the woken turn: want both messages, the queued one too; the model read:\n%s", w.LastMessage)
	}
	if n := runs(); n != 1 {
		t.Errorf("runs: got %d, want 1 (a queued message starts none)", n)
	}

	var pr api.PromptResult
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "w", "prompt": "HANG-HERE"}, &pr)
	eventually(t, "w to hang", e.asked("HANG-HERE"))
	// An interrupt is management: alice, who did not create w, may not;
	// boss, who did, may.
	if msg := toolError(t, alice, "send_message", map[string]any{"to": "w", "content": "stop-it", "deliver": "interrupt"}); !strings.Contains(msg, "only its owner (boss)") {
		t.Errorf("alice interrupts w: got %q, want it refused", msg)
	}
	boss := e.Session(nil, "--agent", "boss")
	mustCall(t, boss, "send_message", map[string]any{"to": "w", "content": "stop-it", "deliver": "interrupt"}, nil)
	var cancelled api.WaitAgentResult
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": "w", "run": pr.Run, "timeout": 60}, &cancelled)
	if cancelled.Run == nil || cancelled.Run.State != "cancelled" {
		t.Fatalf("the hung run after an interrupt: got %+v, want cancelled", cancelled.Run)
	}
	eventually(t, "the interrupting mail to wake w", func() bool { return runs() > pr.Run })
	if w := waitRun(t, m, "w", pr.Run+1); w.Run.Source != "message" || !strings.Contains(w.LastMessage, "stop-it") {
		t.Errorf("the turn after the interrupt: got %+v, the model read:\n%s", w.Run, w.LastMessage)
	}
}
