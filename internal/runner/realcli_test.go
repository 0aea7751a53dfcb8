package runner_test

// Managed agents run by the real Claude Code and Codex CLIs (scripts/test-deps
// installs them under test/npm), with only the model replaced by a scripted
// stand-in (internal/testenv/standin).

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/testenv/standin"
)

// TestRealClaudeCallsParleyTools: a managed Claude Code agent calls
// send_message (what its wake-up prompt asks for) without waiting for a
// person's permission.
func TestRealClaudeCallsParleyTools(t *testing.T) {
	t.Parallel()
	s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		if out, ok := r.ToolResult("toolu_send"); ok {
			return []standin.Block{standin.Text("SENT " + firstWord(out))}
		}
		if r.Has("tell boss") {
			// A real model cannot call a tool Claude Code does not offer:
			// it offers Parley's only once their servers are up.
			if !r.Offers("mcp__parley__send_message") {
				return []standin.Block{standin.Text("NO send_message TOOL OFFERED")}
			}
			return []standin.Block{standin.ToolUse("toolu_send", "mcp__parley__send_message", map[string]any{"to": "boss", "content": "hello from claude"})}
		}
		return nil
	})
	e := newEnv(t, opts{anthropic: s})
	m := e.manager()
	mustCall(t, m, "create_agent", map[string]any{"provider": "perturn", "cwd": t.TempDir(), "prompt": "tell boss hello", "name": "cc"}, nil)
	w := wait(t, m, "cc")
	if w.Permission != nil || w.Status != "idle" || w.Run == nil || w.Run.State != "completed" {
		t.Fatalf("wait_for_agent: got %+v (permission %+v), want the run completed without a permission request", w, w.Permission)
	}
	var inbox api.CheckResult
	e.MustJSON(&inbox, "inbox", "--agent", "boss")
	if len(inbox.Messages) != 1 || inbox.Messages[0].Content != "hello from claude" || inbox.Messages[0].From != "cc" {
		t.Errorf("boss's inbox: got %+v, want hello from claude, from cc (the agent's last message: %q)", inbox.Messages, w.LastMessage)
	}
	if !strings.HasPrefix(w.LastMessage, "SENT ") {
		t.Errorf("last message %q: want the model's answer after the tool result", w.LastMessage)
	}
}

// TestRealCodexCallsParleyTools: a managed Codex agent calls send_message
// (codex exec refuses MCP calls that need approval), and `agent logs` shows
// what the tool answered.
func TestRealCodexCallsParleyTools(t *testing.T) {
	t.Parallel()
	// The scripted model calls at once. Codex would ask it before its MCP
	// servers are up, and answer the call with "unsupported call", unless
	// they are required (which makes it wait for them).
	s := standin.OpenAI(t, func(r *standin.ResponsesRequest) []standin.Item {
		if out, ok := r.Output("call_send"); ok {
			return []standin.Item{standin.Message("SENT " + out)}
		}
		if r.Has("tell boss") {
			return []standin.Item{standin.FunctionCall("call_send", "mcp__parley", "send_message", map[string]any{"to": "boss", "content": "hello from codex"})}
		}
		return nil
	})
	e := newEnv(t, opts{openai: s})
	m := e.manager()
	mustCall(t, m, "create_agent", map[string]any{"provider": "codex", "cwd": t.TempDir(), "prompt": "tell boss hello", "name": "cx"}, nil)
	w := wait(t, m, "cx")
	if w.Status != "idle" || w.Run == nil || w.Run.State != "completed" {
		t.Fatalf("wait_for_agent: got %+v, want the run completed", w)
	}
	var inbox api.CheckResult
	e.MustJSON(&inbox, "inbox", "--agent", "boss")
	if len(inbox.Messages) != 1 || inbox.Messages[0].Content != "hello from codex" {
		t.Fatalf("boss's inbox: got %+v, want hello from codex (timeline:\n%s)", inbox.Messages, activity(t, m, "cx").Content)
	}
	act := activity(t, m, "cx")
	var result *api.ActivityEvent
	for i, ev := range act.Events {
		if ev.Kind == "tool_result" {
			result = &act.Events[i]
		}
	}
	if result == nil || result.IsError || !strings.Contains(result.Text, inbox.Messages[0].MessageID) {
		t.Errorf("the MCP tool result in the timeline: got %+v, want send_message's answer naming %s", result, inbox.Messages[0].MessageID)
	}
	logs := e.Must("agent", "logs", "cx")
	if !strings.Contains(logs, inbox.Messages[0].MessageID) {
		t.Errorf("parley agent logs does not show the tool's result:\n%s", logs)
	}
}

// TestProviderMissingFromDaemonPath: the daemon looks providers up in its own
// PATH, which is not the caller's; the error says which.
func TestProviderMissingFromDaemonPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t, opts{config: "[providers.ghost]\nkind = \"claude\"\ncommand = \"no-such-claude\"\n"})
	m := e.manager()
	msg := toolError(t, m, "create_agent", map[string]any{"provider": "ghost", "cwd": t.TempDir(), "prompt": "hi"})
	if !strings.Contains(msg, "daemon's PATH") || !strings.Contains(msg, filepath.SplitList(os.Getenv("PATH"))[0]) {
		t.Errorf("got %q, want it to name the daemon's PATH and show it", msg)
	}
}

// TestWaitForAgentWithinClientTimeout: a client built on the official
// TypeScript SDK sends no progress token and gives up on a request after
// 60 s. wait_for_agent without a timeout, on a run that goes on, answers it
// before that (timed out, a result the model can act on), where its general
// default of 300 s left the client with a request timeout error.
func TestWaitForAgentWithinClientTimeout(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.Abs("../../test/ts")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the TypeScript SDK is not installed in %s: run scripts/test-deps", dir)
		}
		t.Skipf("the TypeScript SDK is not installed in %s: run scripts/test-deps", dir)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found: %v", err)
	}
	e := newEnv(t, opts{})
	mustCall(t, e.manager(), "create_agent", map[string]any{"provider": "command", "command": "exec sleep 120", "cwd": t.TempDir(), "prompt": "work", "name": "w"}, nil)
	c := exec.Command(node, "call.mjs", bin, "wait_for_agent", `{"agent_id":"w"}`, "--agent", "boss", "--profile", "manager")
	c.Dir, c.Env = dir, e.Environ()
	out, err := c.Output()
	if err != nil {
		t.Fatalf("node call.mjs: %v\n%s", err, out)
	}
	var got struct {
		Result  *api.WaitAgentResult `json:"result"`
		Error   string               `json:"error"`
		Seconds float64              `json:"seconds"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	if got.Error != "" || got.Result == nil || !got.Result.TimedOut || got.Result.Status != "running" || got.Seconds >= 60 {
		t.Errorf("wait_for_agent from the TypeScript SDK: got %s; want a timed-out result within 60 s", out)
	}
}

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// TestRealClaudeWaitForRun: a prompt queued behind a run gets its own run
// id, and wait_for_agent with that id returns that run's answer, not the
// run before it.
func TestRealClaudeWaitForRun(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		switch {
		case r.Has("second task"):
			return []standin.Block{standin.Text("ANSWER-2")}
		case r.Has("first task"):
			<-release // the first run goes on until the test lets it end
			return []standin.Block{standin.Text("ANSWER-1")}
		}
		return nil
	})
	e := newEnv(t, opts{anthropic: s})
	m := e.manager()
	mustCall(t, m, "create_agent", map[string]any{"provider": "perturn", "cwd": t.TempDir(), "prompt": "first task", "name": "cc"}, nil)
	var pr api.PromptResult
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "cc", "prompt": "second task"}, &pr)
	if !pr.Queued || pr.Run != 2 {
		t.Fatalf("send_agent_prompt: got %+v, want queued as run 2", pr)
	}
	close(release)
	var w api.WaitAgentResult
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": "cc", "run": pr.Run, "timeout": 60}, &w)
	if w.TimedOut || w.Run == nil || w.Run.Seq != 2 || w.Run.State != "completed" || w.LastMessage != "ANSWER-2" {
		t.Fatalf("wait_for_agent run 2: got %+v (run %+v), want run 2 completed with ANSWER-2", w, w.Run)
	}
	// An earlier run is found too, and a run that does not exist is said.
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": "cc", "run": 1, "timeout": 60}, &w)
	if w.Run == nil || w.Run.Seq != 1 || w.LastMessage != "ANSWER-1" {
		t.Errorf("wait_for_agent run 1: got %+v (run %+v), want run 1 with ANSWER-1", w, w.Run)
	}
	if msg := toolError(t, m, "wait_for_agent", map[string]any{"agent_id": "cc", "run": 9}); !strings.Contains(msg, "no run 9") {
		t.Errorf("run 9: got %q", msg)
	}
}
