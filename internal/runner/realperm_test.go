package runner_test

// What a managed agent's client does for real: its permission prompts go to
// the inbox and come back in the shape Claude Code accepts, its environment
// is its own, and its hooks speak for it.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/testenv/standin"
)

// planted are client-session variables of the shell that starts the daemon
// (here: as if a Claude Code or Codex session had run `parley`). No agent's
// process may get them: they would point it at that session.
var planted = []string{
	"CLAUDECODE=1", "CLAUDE_CODE_ENTRYPOINT=planted-entrypoint", "CLAUDE_CODE_SESSION_ID=planted-session",
	"CLAUDE_CODE_MESSAGING_SOCKET=/tmp/planted.sock", "CLAUDE_CODE_MESSAGING_TOKEN=planted-token",
	"CLAUDE_CODE_CHILD_SESSION=planted-child", "CLAUDE_CODE_SESSION_ATTENDED=planted-attended",
	"CODEX_THREAD_ID=planted-thread", "CODEX_SESSION_ID=planted-codex-session", "PARLEY_RUN=planted/1",
}

// kept is configuration of the daemon's environment that agents keep.
var kept = []string{"CLAUDE_CODE_MAX_OUTPUT_TOKENS=4096", "PARLEY_TEST_KEPT=kept"}

// checkEnv fails the test if env (NAME=VALUE lines or a map's entries)
// carries a planted value or lacks a kept one; what names whose it is.
func checkEnv(t *testing.T, what string, env map[string]string, agent string) {
	t.Helper()
	for k, v := range env {
		if strings.Contains(v, "planted") {
			t.Errorf("%s has %s=%s, from the session that started the daemon", what, k, v)
		}
	}
	for _, kv := range kept {
		k, v, _ := strings.Cut(kv, "=")
		if env[k] != v {
			t.Errorf("%s: %s=%q, want %q from the daemon's environment", what, k, env[k], v)
		}
	}
	if env["PARLEY_MANAGED_AGENT"] != agent || env["PARLEY_AGENT"] != agent {
		t.Errorf("%s: PARLEY_MANAGED_AGENT=%q PARLEY_AGENT=%q, want %s", what, env["PARLEY_MANAGED_AGENT"], env["PARLEY_AGENT"], agent)
	}
}

// TestRealClaudePermissions: a managed Claude Code agent's Bash call that
// needs approval waits in the permission inbox; the manager's allow with
// its own input runs that input; `parley allow` runs the call (the file it
// writes exists); `parley deny` refuses it and the person's message reaches
// the model. The agent's process and its tools start from the daemon's
// environment without the variables of the session that started the daemon.
func TestRealClaudePermissions(t *testing.T) {
	t.Parallel()
	py := func(code string) map[string]any {
		return map[string]any{"command": "python3 -c " + strconv.Quote(code), "description": "write a file"}
	}
	steps := []struct {
		prompt string
		input  map[string]any
	}{
		{"PERM-ONE", py("open('one','w')")},
		{"PERM-TWO", py("import os,json; json.dump(dict(os.environ), open('env.json','w'))")},
		{"PERM-THREE", py("open('three','w')")},
	}
	s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		// The latest step first: the session's requests carry the earlier.
		for i := len(steps) - 1; i >= 0; i-- {
			id := fmt.Sprintf("toolu_%d", i)
			if out, ok := r.ToolResult(id); ok {
				return []standin.Block{standin.Text(fmt.Sprintf("DONE-%d %s", i+1, out))}
			}
			if r.Has(steps[i].prompt) {
				return []standin.Block{standin.ToolUse(id, "Bash", steps[i].input)}
			}
		}
		return nil
	})
	e := newEnv(t, opts{anthropic: s, daemonEnv: append(planted, kept...)})
	m := e.manager()
	dir := t.TempDir()
	mustCall(t, m, "create_agent", map[string]any{"provider": "claude", "cwd": dir, "prompt": "PERM-ONE", "name": "cc"}, nil)

	w := wait(t, m, "cc")
	if w.Status != "waiting_permission" || w.Permission == nil || w.Permission.ToolName != "Bash" || !strings.Contains(string(w.Permission.Input), "open('one','w')") {
		t.Fatalf("wait_for_agent: got %+v (permission %+v), want waiting_permission for the Bash call", w, w.Permission)
	}
	checkEnv(t, "the claude process", e.leader(t, "cc").env, "cc")
	var pending api.PermissionsResult
	mustCall(t, m, "list_pending_permissions", nil, &pending)
	if len(pending.Permissions) != 1 || pending.Permissions[0].Request.RequestID != w.Permission.RequestID || pending.Permissions[0].AgentID != "cc" {
		t.Fatalf("list_pending_permissions: got %+v, want the one request %s", pending, w.Permission.RequestID)
	}
	if msg := toolError(t, m, "respond_to_permission", map[string]any{"request_id": w.Permission.RequestID, "behavior": "maybe"}); !strings.Contains(msg, "want allow or deny") {
		t.Errorf("bad behavior: got %q", msg)
	}
	// The manager allows, with its own command in place of the model's.
	mustCall(t, m, "respond_to_permission", map[string]any{"request_id": w.Permission.RequestID, "behavior": "allow",
		"updated_input": py("open('one-updated','w')")}, nil)
	if msg := toolError(t, m, "respond_to_permission", map[string]any{"request_id": w.Permission.RequestID, "behavior": "deny"}); !strings.Contains(msg, "already decided: allowed by manager") {
		t.Errorf("second answer: got %q, want it told the request was already allowed by the manager", msg)
	}
	if w := waitRun(t, m, "cc", 1); !strings.HasPrefix(w.LastMessage, "DONE-1") {
		t.Errorf("run 1: got %q, want the model's answer after the tool ran", w.LastMessage)
	}
	if _, err := os.Stat(filepath.Join(dir, "one-updated")); err != nil {
		t.Errorf("the manager's command did not run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "one")); err == nil {
		t.Errorf("the model's own command ran, not the manager's")
	}

	// parley allow: the call runs.
	var pr api.PromptResult
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "cc", "prompt": "PERM-TWO"}, &pr)
	w = wait(t, m, "cc")
	if w.Permission == nil {
		t.Fatalf("run %d: got %+v, want a permission request", pr.Run, w)
	}
	var cli api.PermissionsResult
	e.MustJSON(&cli, "permissions")
	if len(cli.Permissions) != 1 || cli.Permissions[0].Request.RequestID != w.Permission.RequestID {
		t.Fatalf("parley permissions: got %+v, want %s", cli, w.Permission.RequestID)
	}
	e.Must("allow", w.Permission.RequestID)
	if w := waitRun(t, m, "cc", pr.Run); !strings.HasPrefix(w.LastMessage, "DONE-2") {
		t.Errorf("run %d: got %q, want the model's answer after the tool ran", pr.Run, w.LastMessage)
	}
	b, err := os.ReadFile(filepath.Join(dir, "env.json"))
	if err != nil {
		t.Fatalf("the allowed command did not run: %v", err)
	}
	var toolEnv map[string]string
	if err := json.Unmarshal(b, &toolEnv); err != nil {
		t.Fatalf("env.json: %v", err)
	}
	checkEnv(t, "the Bash tool", toolEnv, "cc")

	// parley deny: the call is refused, and the model reads why.
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "cc", "prompt": "PERM-THREE"}, &pr)
	w = wait(t, m, "cc")
	if w.Permission == nil {
		t.Fatalf("run %d: got %+v, want a permission request", pr.Run, w)
	}
	e.Must("deny", w.Permission.RequestID, "--message", "not now, says the person")
	if _, errs, code := e.Run("allow", w.Permission.RequestID); code == 0 || !strings.Contains(errs, "already decided: denied by cli") {
		t.Errorf("parley allow after deny: exit %d, %q; want it told the request was already denied", code, errs)
	}
	if w := waitRun(t, m, "cc", pr.Run); !strings.HasPrefix(w.LastMessage, "DONE-3") || !strings.Contains(w.LastMessage, "not now, says the person") {
		t.Errorf("run %d: got %q, want the model to have read the person's message", pr.Run, w.LastMessage)
	}
	if _, err := os.Stat(filepath.Join(dir, "three")); err == nil {
		t.Errorf("the denied command ran")
	}
	act := activity(t, m, "cc")
	for _, want := range []struct{ kind, sub string }{
		{"permission_requested", "asks to use Bash"},
		{"permission_resolved", "allowed by manager"},
		{"permission_resolved", "allowed by cli"},
		{"permission_resolved", "denied by cli: not now, says the person"},
		{"tool_result", "not now, says the person"},
	} {
		if !hasEvent(act, want.kind, want.sub) {
			t.Errorf("activity lacks a %s event with %q:\n%s", want.kind, want.sub, act.Content)
		}
	}
}

// slowHooks gives the hooks of managed agents 8 s instead of 3 to reach the
// daemon, under the clients' 10 s: a loaded machine runs a race-built
// parley hook in over a second, and a hook that gives up leases nothing.
var slowHooks = []string{"PARLEY_HOOK_TIMEOUT=8s"}

// gitRepo makes a git repository with one commit of src/a.go.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	os.WriteFile(filepath.Join(dir, "src", "a.go"), []byte("v1\n"), 0o644)
	gitRun(t, dir, "init", "-q", "-b", "main")
	gitRun(t, dir, "add", ".")
	gitRun(t, dir, "commit", "-q", "-m", "init")
	return dir
}

// gitRun runs git in dir as the test's author and returns its output.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	c := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// bobsRepo is a repository where bob set up his own session: `parley init
// CLIENT --agent bob --leases`, and bob has mail waiting. It returns the
// repository, bob's status and the message's id.
func bobsRepo(t *testing.T, e *env, client string, env ...string) (repo, status, msg string) {
	t.Helper()
	repo = gitRepo(t)
	c := e.Cmd("init", client, "--agent", "bob", "--leases", "--permissions", "--yes")
	c.Dir, c.Env = repo, append(c.Env, env...)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("parley init %s: %v\n%s", client, err, out)
	}
	e.Must("join", "--name", "bob", "--role", "dev")
	// Not a status bob's own hooks would end a session with.
	e.Must("status", "work", "--agent", "bob")
	var sent api.SendResult
	e.MustJSON(&sent, "send", "--agent", "alice", "bob", "for bob only")
	return repo, bobStatus(t, e), sent.MessageID
}

func bobStatus(t *testing.T, e *env) string {
	t.Helper()
	var list api.ListAgentsResult
	e.MustJSON(&list, "agents")
	for _, a := range list.Agents {
		if a.Name == "bob" {
			return a.WorkStatus + ", last seen " + a.LastSeenAt
		}
	}
	t.Fatalf("bob is not on the bus: %+v", list.Agents)
	return ""
}

// bobUntouched fails the test if the managed agent's run changed bob's
// status or reached his mail.
func bobUntouched(t *testing.T, e *env, status, msg string) {
	t.Helper()
	if got := bobStatus(t, e); got != status {
		t.Errorf("bob's status: %s, want %s as before the managed agent ran", got, status)
	}
	var st api.MessageStatusResult
	e.MustJSON(&st, "delivery", msg, "--agent", "alice")
	if len(st.Recipients) != 1 || st.Recipients[0].State == "read" || st.Recipients[0].WakePath != "" {
		t.Errorf("bob's message: got %+v, want it unread, and no one told of it", st.Recipients)
	}
}

// TestRealClaudeHooksSpeakForManagedAgent: a managed Claude Code agent in
// a repository whose hooks bob's `parley init claude --agent bob --leases`
// wrote: its Write is leased to it, not to bob, its tools speak as it, and
// bob's status and mail are as they were.
func TestRealClaudeHooksSpeakForManagedAgent(t *testing.T) {
	t.Parallel()
	var target string
	s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		switch {
		case r.Has("WRITE-IT") && r.Has("toolu_send"):
			return []standin.Block{standin.Text("WROTE-AND-SENT")}
		case r.Has("WRITE-IT") && r.Has("toolu_write"):
			return []standin.Block{standin.ToolUse("toolu_send", "mcp__parley__send_message", map[string]any{"to": "alice", "content": "written"})}
		case r.Has("WRITE-IT"):
			return []standin.Block{standin.ToolUse("toolu_write", "Write", map[string]any{"file_path": target, "content": "by the managed agent\n"})}
		}
		return nil
	})
	e := newEnv(t, opts{anthropic: s, daemonEnv: slowHooks})
	repo, status, msg := bobsRepo(t, e, "claude")
	target = filepath.Join(repo, "src", "new.go")
	m := e.manager()
	mustCall(t, m, "create_agent", map[string]any{"provider": "perturn", "cwd": repo, "mode": "acceptEdits", "prompt": "WRITE-IT", "name": "mw"}, nil)
	if w := waitRun(t, m, "mw", 1); w.LastMessage != "WROTE-AND-SENT" {
		t.Fatalf("run 1: got %q, want WROTE-AND-SENT:\n%s", w.LastMessage, activity(t, m, "mw").Content)
	}
	if b, _ := os.ReadFile(target); string(b) != "by the managed agent\n" {
		t.Fatalf("src/new.go: %q, want the managed agent's Write", b)
	}
	c := e.Cmd("reserve", "who", "src/new.go")
	c.Dir = repo
	if out, _ := c.CombinedOutput(); !strings.Contains(string(out), "by mw") || !strings.Contains(string(out), "editing it (Write)") {
		t.Errorf("who has src/new.go: %q; want the managed agent's lease", out)
	}
	var inbox api.CheckResult
	e.MustJSON(&inbox, "inbox", "--agent", "alice")
	if len(inbox.Messages) != 1 || inbox.Messages[0].From != "mw" {
		t.Errorf("alice's inbox: got %+v, want the managed agent's message from mw", inbox.Messages)
	}
	bobUntouched(t, e, status, msg)
}

// TestRealCodexHooksSpeakForManagedAgent: the same for a managed Codex
// agent, whose Codex home has the hooks (trusted) and the server that
// `parley init codex --agent bob --leases --permissions` wrote. And in
// app-server mode, where Codex runs the PermissionRequest hook before it
// asks its client, the hook steps aside for a managed agent: the one
// request in the inbox is the runner's, and allowing it runs the command.
func TestRealCodexHooksSpeakForManagedAgent(t *testing.T) {
	t.Parallel()
	patch := "*** Begin Patch\n*** Add File: src/new.go\n+by the managed agent\n*** End Patch\n"
	s := standin.OpenAI(t, func(r *standin.ResponsesRequest) []standin.Item {
		switch {
		case r.Has("ESCALATE-IN-BOBS-REPO"):
			if _, ok := r.Output("call_esc"); ok {
				return []standin.Item{standin.Message("AFTER-ESC")}
			}
			return []standin.Item{standin.FunctionCall("call_esc", "", "exec_command", map[string]any{
				"cmd": "touch escalated", "sandbox_permissions": "require_escalated", "justification": "needs the whole disk"})}
		case r.Has("call_send"):
			return []standin.Item{standin.Message("WROTE-AND-SENT")}
		case r.Has("call_patch"):
			return []standin.Item{standin.FunctionCall("call_send", "mcp__parley", "send_message", map[string]any{"to": "alice", "content": "written"})}
		case r.Has("WRITE-IT"):
			return []standin.Item{{"type": "custom_tool_call", "call_id": "call_patch", "name": "apply_patch", "input": patch}}
		}
		return nil
	})
	e := newEnv(t, opts{openai: s, daemonEnv: slowHooks})
	codex := standin.CLI(t, "codex")
	// With codex on PATH, init has Codex trust the hooks it adds.
	repo, status, msg := bobsRepo(t, e, "codex", "CODEX_HOME="+standin.CodexHome(e.clients),
		"PATH="+filepath.Dir(codex)+string(os.PathListSeparator)+os.Getenv("PATH"))
	m := e.manager()
	mustCall(t, m, "create_agent", map[string]any{"provider": "codex", "cwd": repo, "prompt": "WRITE-IT", "name": "mw"}, nil)
	if w := waitRun(t, m, "mw", 1); w.LastMessage != "WROTE-AND-SENT" {
		t.Fatalf("run 1: got %q, want WROTE-AND-SENT:\n%s", w.LastMessage, activity(t, m, "mw").Content)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "src", "new.go")); string(b) != "by the managed agent\n" {
		t.Fatalf("src/new.go: %q, want the managed agent's patch", b)
	}
	c := e.Cmd("reserve", "who", "src/new.go")
	c.Dir = repo
	if out, _ := c.CombinedOutput(); !strings.Contains(string(out), "by mw") || !strings.Contains(string(out), "editing it (apply_patch)") {
		t.Errorf("who has src/new.go: %q; want the managed agent's lease", out)
	}
	var inbox api.CheckResult
	e.MustJSON(&inbox, "inbox", "--agent", "alice")
	if len(inbox.Messages) != 1 || inbox.Messages[0].From != "mw" {
		t.Errorf("alice's inbox: got %+v, want the managed agent's message from mw", inbox.Messages)
	}
	bobUntouched(t, e, status, msg)

	mustCall(t, m, "create_agent", map[string]any{"provider": "codexsteer", "cwd": repo, "prompt": "ESCALATE-IN-BOBS-REPO", "name": "ms"}, nil)
	// A hook that filed a request of its own would hold Codex's for its
	// --wait (50 s) before Codex asked the runner.
	var w api.WaitAgentResult
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": "ms", "timeout": 30}, &w)
	var perms api.PermissionsResult
	e.MustJSON(&perms, "permissions")
	if w.Permission == nil || len(perms.Permissions) != 1 || perms.Permissions[0].AgentID != "ms" || perms.Permissions[0].Request.Source != "managed" {
		t.Fatalf("the escalation: got %+v, inbox %+v; want one request, the runner's for ms", w, perms.Permissions)
	}
	e.Must("allow", w.Permission.RequestID)
	if w := waitRun(t, m, "ms", 1); w.LastMessage != "AFTER-ESC" {
		t.Errorf("run 1 of ms: got %q, want AFTER-ESC", w.LastMessage)
	}
	if _, err := os.Stat(filepath.Join(repo, "escalated")); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
	bobUntouched(t, e, status, msg)
}
