package profile_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/ops"
)

// The manager and self profiles' tools, on a real hub, runner and
// permission inbox over one SQLite file, through in-memory MCP transports.
// The agents are the command provider's shell commands: real processes.

// mustCall calls a tool that must succeed.
func mustCall(t *testing.T, s *mcp.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	if res := call(t, s, name, args, out); res.IsError {
		t.Fatalf("%s(%v): %s", name, args, text(res))
	}
}

// toolError calls a tool that must fail, and returns its message.
func toolError(t *testing.T, s *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res := call(t, s, name, args, nil)
	if !res.IsError {
		t.Fatalf("%s(%v): got success %s, want a tool error", name, args, text(res))
	}
	return text(res)
}

func manager(e *env, ws string) *mcp.ClientSession {
	return e.Session(ops.Caller{Workspace: ws, Agent: "boss", Profiles: []string{"manager"}}, nil)
}

// waitAgent waits for the agent's current run to end.
func waitAgent(t *testing.T, m *mcp.ClientSession, id string) api.WaitAgentResult {
	t.Helper()
	var w api.WaitAgentResult
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": id, "timeout": 30}, &w)
	if w.TimedOut {
		t.Fatalf("wait_for_agent %s timed out: %+v", id, w)
	}
	return w
}

// TestManagerLifecycle walks a command agent through every manager tool but
// the permission ones: create, wait, prompt (queued behind a run), status,
// list, activity, mode, cancel and kill.
func TestManagerLifecycle(t *testing.T) {
	e := newEnv(t)
	m := manager(e, "w")
	dir := t.TempDir()

	var a api.ManagedAgent
	mustCall(t, m, "create_agent", map[string]any{"provider": "command", "command": `echo "stdin: $(cat)"; echo got {prompt}`,
		"cwd": dir, "name": "c1", "title": "echoes", "prompt": "first turn"}, &a)
	if a.AgentID != "c1" || a.Provider != "command" || a.Title != "echoes" || a.Cwd != dir || a.Status != "running" {
		t.Errorf("create_agent: got %+v, want c1 running in %s", a, dir)
	}
	w := waitAgent(t, m, "c1")
	if w.Status != "idle" || w.LastMessage != "got first turn" || w.Run == nil || w.Run.Seq != 1 || w.Run.State != "completed" {
		t.Errorf("wait_for_agent: got %+v (run %+v), want idle after run 1 said %q", w, w.Run, "got first turn")
	}

	// The timeline holds what the command wrote, stdin included.
	var act api.ActivityResult
	mustCall(t, m, "get_agent_activity", map[string]any{"agent_id": "c1", "offset": 0, "limit": 100}, &act)
	var texts []string
	for _, ev := range act.Events {
		if ev.Kind == "text" {
			texts = append(texts, ev.Text)
		}
	}
	if act.AgentID != "c1" || act.UpdateCount != len(act.Events) || !strings.Contains(strings.Join(texts, "\n"), "stdin: first turn") || !strings.Contains(act.Content, "got first turn") {
		t.Errorf("get_agent_activity: got %d of %d events, texts %q, summary %q", len(act.Events), act.UpdateCount, texts, act.Content)
	}
	mustCall(t, m, "get_agent_activity", map[string]any{"agent_id": "c1", "offset": 0, "limit": 1}, &act)
	if len(act.Events) != 1 || act.Offset != 0 || act.UpdateCount < 2 {
		t.Errorf("a page of one: got %d events at %d of %d", len(act.Events), act.Offset, act.UpdateCount)
	}
	if msg := toolError(t, m, "get_agent_activity", map[string]any{"agent_id": "c1", "limit": -1}); !strings.Contains(msg, "limit") {
		t.Errorf("negative limit: got %q", msg)
	}

	// The mode applies from the next run; a bad one is refused.
	var mode api.ModeResult
	mustCall(t, m, "set_agent_mode", map[string]any{"agent_id": "c1", "mode": "acceptEdits"}, &mode)
	if !mode.Success || mode.NewMode != "acceptEdits" {
		t.Errorf("set_agent_mode: got %+v", mode)
	}
	if msg := toolError(t, m, "set_agent_mode", map[string]any{"agent_id": "c1", "mode": "yolo"}); !strings.Contains(msg, "invalid mode") {
		t.Errorf("bad mode: got %q", msg)
	}

	var p api.PromptResult
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "c1", "prompt": "second turn"}, &p)
	if !p.Success || p.Run != 2 || p.Queued {
		t.Errorf("prompt to an idle agent: got %+v, want run 2 started", p)
	}
	if w := waitAgent(t, m, "c1"); w.LastMessage != "got second turn" || w.Run.Seq != 2 {
		t.Errorf("second run: got %+v, want run 2 saying %q", w, "got second turn")
	}

	// A long run, and a prompt queued behind it; cancelling the run starts
	// the queued one, and the agent stays usable.
	mustCall(t, m, "create_agent", map[string]any{"provider": "command", "command": "echo started; exec sleep 60", "cwd": dir, "name": "s1"}, nil)
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "s1", "prompt": "sleep"}, &p)
	if p.Run != 1 || p.Queued {
		t.Errorf("first prompt of s1: got %+v, want run 1 started", p)
	}
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "s1", "prompt": "after"}, &p)
	if p.Run != 2 || !p.Queued {
		t.Errorf("prompt behind a run: got %+v, want run 2 queued", p)
	}
	var st api.AgentStatusResult
	mustCall(t, m, "get_agent_status", map[string]any{"agent_id": "s1"}, &st)
	if st.Status != "running" || st.Snapshot.Queued != 1 || st.Snapshot.CurrentRun == nil || st.Snapshot.CurrentRun.Seq != 1 {
		t.Errorf("get_agent_status while running: got %+v", st)
	}
	var ok api.SuccessResult
	mustCall(t, m, "cancel_agent", map[string]any{"agent_id": "s1"}, &ok)
	if !ok.Success {
		t.Errorf("cancel_agent: got %+v", ok)
	}
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": "s1", "run": 1, "timeout": 30}, &w)
	if w.TimedOut || w.Run == nil || w.Run.Seq != 1 || w.Run.State != "cancelled" {
		t.Errorf("wait for the cancelled run: got %+v (run %+v), want run 1 cancelled", w, w.Run)
	}
	// The queued prompt starts once the cancelled run is reaped.
	waitFor(t, "run 2 (the queued prompt) to start", func() bool {
		mustCall(t, m, "get_agent_status", map[string]any{"agent_id": "s1"}, &st)
		return st.Snapshot.CurrentRun != nil && st.Snapshot.CurrentRun.Seq == 2 && st.Snapshot.Queued == 0
	})

	// Both agents are listed, in this workspace only.
	var list api.ManagedAgentsResult
	mustCall(t, m, "list_agents", nil, &list)
	if list.Count != 2 || len(list.Agents) != 2 || list.Agents[0].AgentID != "c1" || list.Agents[1].AgentID != "s1" || list.Agents[0].Mode != "acceptEdits" {
		t.Errorf("list_agents: got %+v, want c1 (acceptEdits) and s1", list)
	}
	other := manager(e, "elsewhere")
	mustCall(t, other, "list_agents", nil, &list)
	if list.Count != 0 {
		t.Errorf("list_agents of another workspace: got %+v, want none", list)
	}
	if msg := toolError(t, other, "get_agent_status", map[string]any{"agent_id": "c1"}); !strings.Contains(msg, "no managed agent") {
		t.Errorf("status across workspaces: got %q", msg)
	}

	// A killed agent takes no more prompts.
	mustCall(t, m, "kill_agent", map[string]any{"agent_id": "s1"}, &ok)
	if !ok.Success || ok.Status != "exited" {
		t.Errorf("kill_agent: got %+v, want exited", ok)
	}
	if msg := toolError(t, m, "send_agent_prompt", map[string]any{"agent_id": "s1", "prompt": "more"}); !strings.Contains(msg, "was killed") {
		t.Errorf("prompt to a killed agent: got %q", msg)
	}
	mustCall(t, m, "get_agent_status", map[string]any{"agent_id": "s1"}, &st)
	if st.Status != "exited" {
		t.Errorf("status after kill: got %s, want exited", st.Status)
	}
}

// TestManagerCreateErrors: bad input gets a clear error and creates nothing.
func TestManagerCreateErrors(t *testing.T) {
	e := newEnv(t)
	m := manager(e, "w")
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"unknown provider", map[string]any{"provider": "gemini", "cwd": dir}, "unknown provider"},
		{"relative cwd", map[string]any{"provider": "command", "command": "true", "cwd": "src"}, "absolute"},
		{"bad mode", map[string]any{"provider": "command", "command": "true", "cwd": dir, "mode": "yolo"}, "invalid mode"},
		{"command without command", map[string]any{"provider": "command", "cwd": dir}, "needs a command"},
		{"bad name", map[string]any{"provider": "command", "command": "true", "cwd": dir, "name": "no spaces"}, "invalid agent name"},
		{"taken name", map[string]any{"provider": "command", "command": "true", "cwd": dir, "name": "boss"}, "already exists"},
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
		t.Errorf("after bad creates: got %+v, want no agents", list)
	}
	for _, tool := range []string{"get_agent_status", "wait_for_agent", "cancel_agent", "kill_agent", "get_agent_activity"} {
		if msg := toolError(t, m, tool, map[string]any{"agent_id": "ghost"}); !strings.Contains(msg, "no managed agent") {
			t.Errorf("%s of ghost: got %q", tool, msg)
		}
	}
}

// TestManagerPermissions: a managed agent asks through the self profile and
// blocks; the manager lists the request and answers it, with its own input
// in place of the agent's; the self profile refuses agents Parley did not
// launch.
func TestManagerPermissions(t *testing.T) {
	e := newEnv(t)
	m := manager(e, "w")
	mustCall(t, m, "create_agent", map[string]any{"provider": "command", "command": "exec sleep 60", "cwd": t.TempDir(), "name": "w1", "prompt": "work"}, nil)
	self := e.Session(ops.Caller{Workspace: "w", Agent: "w1", Profiles: []string{"self"}}, nil)

	mustCall(t, self, "set_title", map[string]any{"title": "renamed by itself"}, nil)
	if msg := toolError(t, self, "set_branch", map[string]any{"branch": "feature"}); !strings.Contains(msg, "worktree") {
		t.Errorf("set_branch outside a Parley worktree: got %q", msg)
	}

	answered := make(chan api.PermissionAnswer, 1)
	go func() {
		var a api.PermissionAnswer
		res := call(t, self, "request_permission", map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "rm -rf build"}}, nil)
		if res.IsError {
			t.Errorf("request_permission: %s", text(res))
		}
		// Claude Code reads the answer from one text block, and refuses a
		// result that carries anything else.
		if err := json.Unmarshal([]byte(text(res)), &a); err != nil {
			t.Errorf("request_permission's text %q: %v", text(res), err)
		}
		if len(res.Content) != 1 || res.StructuredContent != nil {
			t.Errorf("request_permission's result: %d content blocks, structured content %v; want one text block alone", len(res.Content), res.StructuredContent)
		}
		answered <- a
	}()

	// The request is listed as soon as it is filed, and the agent's status
	// follows: wait for both.
	var pending api.PermissionsResult
	var st api.AgentStatusResult
	waitFor(t, "the request to be pending", func() bool {
		mustCall(t, m, "list_pending_permissions", nil, &pending)
		mustCall(t, m, "get_agent_status", map[string]any{"agent_id": "w1"}, &st)
		return len(pending.Permissions) == 1 && st.Status == "waiting_permission"
	})
	pp := pending.Permissions[0]
	if pp.AgentID != "w1" || pp.Status != "waiting_permission" || pp.Request.ToolName != "Bash" || !strings.Contains(string(pp.Request.Input), "rm -rf build") {
		t.Errorf("list_pending_permissions: got %+v", pp)
	}
	if st.Status != "waiting_permission" || st.Snapshot.Title != "renamed by itself" || len(st.Snapshot.PendingPermissions) != 1 {
		t.Errorf("get_agent_status while asking: got %+v, want waiting_permission, the new title, one request", st)
	}
	// Another workspace's manager neither sees nor answers it.
	other := manager(e, "elsewhere")
	var none api.PermissionsResult
	mustCall(t, other, "list_pending_permissions", nil, &none)
	if len(none.Permissions) != 0 {
		t.Errorf("another workspace's pending permissions: got %+v", none)
	}
	if msg := toolError(t, other, "respond_to_permission", map[string]any{"request_id": pp.Request.RequestID, "behavior": "allow"}); msg == "" {
		t.Error("respond from another workspace: got an empty error")
	}
	if msg := toolError(t, m, "respond_to_permission", map[string]any{"request_id": pp.Request.RequestID, "behavior": "maybe"}); !strings.Contains(msg, "behavior") {
		t.Errorf("bad behavior: got %q", msg)
	}

	var ok api.SuccessResult
	mustCall(t, m, "respond_to_permission", map[string]any{"request_id": pp.Request.RequestID, "behavior": "allow",
		"updated_input": map[string]any{"command": "rm -rf build/tmp"}}, &ok)
	a := <-answered
	if !ok.Success || a.Behavior != "allow" || !strings.Contains(string(a.UpdatedInput), "build/tmp") {
		t.Errorf("answer: respond gave %+v, the agent got %+v, want allow with the manager's input", ok, a)
	}
	mustCall(t, m, "list_pending_permissions", nil, &pending)
	if len(pending.Permissions) != 0 {
		t.Errorf("after the answer: got %+v, want none pending", pending)
	}

	// The self profile is for agents Parley launched.
	outsider := e.Session(ops.Caller{Workspace: "w", Agent: "outsider", Profiles: []string{"self"}}, nil)
	for tool, args := range map[string]map[string]any{
		"set_title":          {"title": "x"},
		"request_permission": {"tool_name": "Bash", "input": map[string]any{}},
	} {
		if msg := toolError(t, outsider, tool, args); !strings.Contains(msg, "agents Parley launched") {
			t.Errorf("%s from an agent Parley did not launch: got %q", tool, msg)
		}
	}
}
