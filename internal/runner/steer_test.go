package runner_test

// Steerable managed agents (provider steer = true) run by the real Codex
// app-server and the real Claude Code with stream-json input, each with a
// scripted stand-in for its model.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/testenv/standin"
)

// TestRealCodexAppServer: a steerable Codex agent runs on one codex
// app-server across its runs. A prompt sent during a run is streamed into
// it (turn/steer) and ends with it; an escalation goes to the permission
// inbox, and a person's deny there is Codex's answer and shows in the
// timeline; cancel interrupts the turn (turn/interrupt) and the agent goes
// on in the same process.
func TestRealCodexAppServer(t *testing.T) {
	release, hang := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(hang) })
	s := standin.OpenAI(t, func(r *standin.ResponsesRequest) []standin.Item {
		switch {
		case r.Has("AFTER-CANCEL"):
			return []standin.Item{standin.Message("ANSWER-4")}
		case r.Has("HANG-NOW"):
			<-hang
			return nil
		case r.Has("ESCALATE-NOW"):
			if out, ok := r.Output("call_esc"); ok {
				return []standin.Item{standin.Message("AFTER-ESC " + out)}
			}
			return []standin.Item{standin.FunctionCall("call_esc", "", "exec_command", map[string]any{
				"cmd": "touch escalated", "sandbox_permissions": "require_escalated", "justification": "needs the whole disk"})}
		case r.Has("SECOND-TASK"):
			return []standin.Item{standin.Message("ANSWER-2")}
		case r.Has("FIRST-TASK"):
			<-release // the first run goes on until the test has steered
			return []standin.Item{standin.Message("ANSWER-1")}
		}
		return nil
	})
	e := realEnv(t, nil, s)
	m := e.manager()
	cwd := t.TempDir()
	mustCall(t, m, "create_agent", map[string]any{"provider": "realcodexsteer", "cwd": cwd, "prompt": "FIRST-TASK", "name": "cx"}, nil)
	eventually(t, "the model is asked the first task", func() bool { return s.Saw("FIRST-TASK") })

	var pr api.PromptResult
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "cx", "prompt": "SECOND-TASK"}, &pr)
	if !pr.Steered || pr.Queued || pr.Run != 2 {
		t.Fatalf("send_agent_prompt during run 1: got %+v, want run 2 steered into it", pr)
	}
	close(release)
	var w api.WaitAgentResult
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": "cx", "run": 2, "timeout": 60}, &w)
	if w.Run == nil || w.Run.State != "completed" || w.LastMessage != "ANSWER-2" {
		t.Fatalf("wait_for_agent run 2: got %+v (run %+v, perm %+v), want completed with ANSWER-2", w, w.Run, w.Permission)
	}
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": "cx", "run": 1, "timeout": 60}, &w)
	if w.Run == nil || w.Run.State != "completed" || w.LastMessage != "ANSWER-2" {
		t.Fatalf("wait_for_agent run 1: got %+v (run %+v), want completed with the steered turn's ANSWER-2", w, w.Run)
	}

	// An escalation waits in the inbox; a person denies it.
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "cx", "prompt": "ESCALATE-NOW please"}, &pr)
	w = wait(t, m, "cx")
	if w.Permission == nil || w.Permission.ToolName != "shell" || !strings.Contains(string(w.Permission.Input), "touch escalated") {
		t.Fatalf("wait_for_agent during the escalation: got %+v (permission %+v), want a shell permission request", w, w.Permission)
	}
	e.Must("deny", w.Permission.RequestID, "--message", "not on this machine")
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": "cx", "run": pr.Run, "timeout": 60}, &w)
	if w.Run == nil || w.Run.State != "completed" || !strings.HasPrefix(w.LastMessage, "AFTER-ESC") {
		t.Fatalf("wait_for_agent run %d: got %+v (run %+v), want completed after the refusal", pr.Run, w, w.Run)
	}
	if _, err := os.Stat(filepath.Join(cwd, "escalated")); err == nil {
		t.Errorf("the denied command ran")
	}
	act := activity(t, m, "cx")
	for _, want := range []struct{ kind, sub string }{
		{"steered", "SECOND-TASK"},
		{"permission_requested", "shell"},
		{"permission_resolved", "denied by cli"},
		{"tool_result", "declined"},
	} {
		if !hasEvent(act, want.kind, want.sub) {
			t.Errorf("the timeline has no %s event with %q:\n%s", want.kind, want.sub, act.Content)
		}
	}

	// Cancel interrupts the turn; the same process takes the next prompt.
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "cx", "prompt": "HANG-NOW"}, &pr)
	eventually(t, "the model is asked to hang", func() bool { return s.Saw("HANG-NOW") })
	var cr api.SuccessResult
	mustCall(t, m, "cancel_agent", map[string]any{"agent_id": "cx"}, &cr)
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": "cx", "run": pr.Run, "timeout": 60}, &w)
	if w.Run == nil || w.Run.State != "cancelled" {
		t.Fatalf("the cancelled run: got %+v, want cancelled", w.Run)
	}
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "cx", "prompt": "AFTER-CANCEL"}, &pr)
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": "cx", "run": pr.Run, "timeout": 60}, &w)
	if w.Run == nil || w.Run.State != "completed" || w.LastMessage != "ANSWER-4" {
		t.Fatalf("the run after the cancel: got %+v (run %+v), want completed with ANSWER-4", w, w.Run)
	}
	if n := sessionsStarted(t, e); n != 1 {
		t.Errorf("%d codex app-servers started, want 1 for every run", n)
	}
}

// TestRealCodexRefusalInTimeline: codex exec refuses an escalation without
// asking anyone (its approvals are off) and says so only in its log; the
// managed agent's timeline shows it.
func TestRealCodexRefusalInTimeline(t *testing.T) {
	s := standin.OpenAI(t, func(r *standin.ResponsesRequest) []standin.Item {
		if out, ok := r.Output("call_esc"); ok {
			return []standin.Item{standin.Message("AFTER " + firstWord(out))}
		}
		if r.Has("ESCALATE-NOW") {
			return []standin.Item{standin.FunctionCall("call_esc", "", "exec_command", map[string]any{
				"cmd": "touch escalated", "sandbox_permissions": "require_escalated", "justification": "needs the whole disk"})}
		}
		return nil
	})
	e := realEnv(t, nil, s)
	m := e.manager()
	mustCall(t, m, "create_agent", map[string]any{"provider": "realcodex", "cwd": t.TempDir(), "prompt": "ESCALATE-NOW", "name": "cx"}, nil)
	w := wait(t, m, "cx")
	if w.Run == nil || w.Run.State != "completed" {
		t.Fatalf("wait_for_agent: got %+v (run %+v), want completed", w, w.Run)
	}
	if act := activity(t, m, "cx"); !hasEvent(act, "refused", "approval policy is Never") {
		t.Errorf("the timeline does not show the refused escalation:\n%s", act.Content)
	}
}

// TestRealClaudeSteer: a steerable Claude Code agent keeps one process
// (stream-json input) across its runs; a prompt sent during a run is
// streamed into it and ends with the turn that takes it in; cancel
// interrupts the turn and the process takes the next prompt.
func TestRealClaudeSteer(t *testing.T) {
	release, hang := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(hang) })
	s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		switch {
		case r.Has("AFTER-CANCEL"):
			return []standin.Block{standin.Text("ANSWER-4")}
		case r.Has("HANG-NOW"):
			<-hang
			return nil
		case r.Has("THIRD-TASK"):
			return []standin.Block{standin.Text("ANSWER-3")}
		case r.Has("SECOND-TASK"):
			return []standin.Block{standin.Text("ANSWER-2")}
		case r.Has("FIRST-TASK"):
			if _, ok := r.ToolResult("toolu_chk"); ok {
				return []standin.Block{standin.Text("ANSWER-1")}
			}
			<-release // the first run goes on until the test has steered
			return []standin.Block{standin.ToolUse("toolu_chk", "mcp__parley__check_messages", nil)}
		}
		return nil
	})
	e := realEnv(t, s, nil)
	m := e.manager()
	mustCall(t, m, "create_agent", map[string]any{"provider": "realclaudesteer", "cwd": t.TempDir(), "prompt": "FIRST-TASK", "name": "cc"}, nil)
	eventually(t, "the model is asked the first task", func() bool { return s.Saw("FIRST-TASK") })

	var pr api.PromptResult
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "cc", "prompt": "SECOND-TASK"}, &pr)
	if !pr.Steered || pr.Queued || pr.Run != 2 {
		t.Fatalf("send_agent_prompt during run 1: got %+v, want run 2 steered into it", pr)
	}
	close(release)
	var w api.WaitAgentResult
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": "cc", "run": 2, "timeout": 60}, &w)
	if w.Run == nil || w.Run.State != "completed" || w.LastMessage != "ANSWER-2" {
		t.Fatalf("wait_for_agent run 2: got %+v (run %+v), want completed with ANSWER-2", w, w.Run)
	}
	// Claude Code takes a prompt in at the next tool result, or else runs
	// it as a turn of its own once the first ends: run 1 ends either way.
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": "cc", "run": 1, "timeout": 60}, &w)
	if w.Run == nil || w.Run.State != "completed" || (w.LastMessage != "ANSWER-2" && w.LastMessage != "ANSWER-1") {
		t.Fatalf("wait_for_agent run 1: got %+v (run %+v), want completed", w, w.Run)
	}

	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "cc", "prompt": "THIRD-TASK"}, &pr)
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": "cc", "run": pr.Run, "timeout": 60}, &w)
	if w.Run == nil || w.Run.State != "completed" || w.LastMessage != "ANSWER-3" {
		t.Fatalf("run %d: got %+v (run %+v), want completed with ANSWER-3", pr.Run, w, w.Run)
	}

	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "cc", "prompt": "HANG-NOW"}, &pr)
	eventually(t, "the model is asked to hang", func() bool { return s.Saw("HANG-NOW") })
	mustCall(t, m, "cancel_agent", map[string]any{"agent_id": "cc"}, nil)
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": "cc", "run": pr.Run, "timeout": 60}, &w)
	if w.Run == nil || w.Run.State != "cancelled" {
		t.Fatalf("the cancelled run: got %+v, want cancelled", w.Run)
	}
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "cc", "prompt": "AFTER-CANCEL"}, &pr)
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": "cc", "run": pr.Run, "timeout": 60}, &w)
	if w.Run == nil || w.Run.State != "completed" || w.LastMessage != "ANSWER-4" {
		t.Fatalf("the run after the cancel: got %+v (run %+v), want completed with ANSWER-4", w, w.Run)
	}
	if n := sessionsStarted(t, e); n != 1 {
		t.Errorf("%d session processes started, want 1 for every run", n)
	}
}

// sessionsStarted counts the session processes the daemon started.
func sessionsStarted(t *testing.T, e *env) int {
	b, err := os.ReadFile(filepath.Join(e.home, "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), `msg="session started"`)
}
