package runner_test

// Steerable managed agents: the real Codex app-server (steer = true) and the
// real Claude Code with stream-json input (Claude's default), each with a
// scripted stand-in for its model.

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/testenv/standin"
)

// TestRealCodexAppServer: a steerable Codex agent runs on one codex
// app-server across its runs. A prompt sent during a run is streamed into
// it (turn/steer) and ends with it; an escalation goes to the permission
// inbox, where a person's deny is Codex's answer and shows in the timeline,
// and `parley allow` runs the command; cancel interrupts the turn
// (turn/interrupt) and the agent goes on in the same process.
func TestRealCodexAppServer(t *testing.T) {
	t.Parallel()
	first, release := gate(t)
	s := standin.OpenAI(t, func(r *standin.ResponsesRequest) []standin.Item {
		switch {
		case r.Has("AFTER-CANCEL"):
			return []standin.Item{standin.Message("ANSWER-4")}
		case r.Has("HANG-NOW"):
			hold(r, nil)
			return nil
		case r.Has("ESCALATE-ALLOW"):
			if out, ok := r.Output("call_allow"); ok {
				return []standin.Item{standin.Message("AFTER-ALLOW " + out)}
			}
			return []standin.Item{standin.FunctionCall("call_allow", "", "exec_command", map[string]any{
				"cmd": "touch allowed", "sandbox_permissions": "require_escalated", "justification": "needs the whole disk"})}
		case r.Has("ESCALATE-NOW"):
			if out, ok := r.Output("call_esc"); ok {
				return []standin.Item{standin.Message("AFTER-ESC " + out)}
			}
			return []standin.Item{standin.FunctionCall("call_esc", "", "exec_command", map[string]any{
				"cmd": "touch escalated", "sandbox_permissions": "require_escalated", "justification": "needs the whole disk"})}
		case r.Has("SECOND-TASK"):
			return []standin.Item{standin.Message("ANSWER-2")}
		case r.Has("FIRST-TASK"):
			<-first // the first run goes on until the test has steered
			return []standin.Item{standin.Message("ANSWER-1")}
		}
		return nil
	})
	e := newEnv(t, opts{openai: s})
	m := e.manager()
	cwd := t.TempDir()
	startFirstTask(t, m, s, "codexsteer", "cx", cwd)
	steerSecondTask(t, m, "cx", release)
	if w := waitRun(t, m, "cx", 1); w.LastMessage != "ANSWER-2" {
		t.Fatalf("run 1: got %q, want the steered turn's ANSWER-2", w.LastMessage)
	}

	// An escalation waits in the inbox; a person denies it.
	var pr api.PromptResult
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "cx", "prompt": "ESCALATE-NOW please"}, &pr)
	w := wait(t, m, "cx")
	if w.Permission == nil || w.Permission.ToolName != "shell" || !strings.Contains(string(w.Permission.Input), "touch escalated") {
		t.Fatalf("wait_for_agent during the escalation: got %+v (permission %+v), want a shell permission request", w, w.Permission)
	}
	e.Must("deny", w.Permission.RequestID, "--message", "not on this machine")
	if w = waitRun(t, m, "cx", pr.Run); !strings.HasPrefix(w.LastMessage, "AFTER-ESC") {
		t.Fatalf("run %d: got %q, want the answer after the refusal", pr.Run, w.LastMessage)
	}
	if _, err := os.Stat(filepath.Join(cwd, "escalated")); err == nil {
		t.Errorf("the denied command ran")
	}
	// Another; `parley allow` runs it.
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "cx", "prompt": "ESCALATE-ALLOW please"}, &pr)
	if w = wait(t, m, "cx"); w.Permission == nil || !strings.Contains(string(w.Permission.Input), "touch allowed") {
		t.Fatalf("wait_for_agent during the second escalation: got %+v (permission %+v), want a shell permission request", w, w.Permission)
	}
	e.Must("allow", w.Permission.RequestID)
	if w = waitRun(t, m, "cx", pr.Run); !strings.HasPrefix(w.LastMessage, "AFTER-ALLOW") {
		t.Fatalf("run %d: got %q, want the answer after the command ran", pr.Run, w.LastMessage)
	}
	if _, err := os.Stat(filepath.Join(cwd, "allowed")); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
	act := activity(t, m, "cx")
	for _, want := range []struct{ kind, sub string }{
		{"steered", "SECOND-TASK"},
		{"permission_requested", "shell"},
		{"permission_resolved", "denied by cli"},
		{"permission_resolved", "allowed by cli"},
		{"tool_result", "declined"},
	} {
		if !hasEvent(act, want.kind, want.sub) {
			t.Errorf("the timeline has no %s event with %q:\n%s", want.kind, want.sub, act.Content)
		}
	}
	cancelGoesOn(t, e, m, s, "cx")
}

// TestRealCodexRefusalInTimeline: codex exec refuses an escalation without
// asking anyone (its approvals are off) and says so only in its log; the
// managed agent's timeline shows it.
func TestRealCodexRefusalInTimeline(t *testing.T) {
	t.Parallel()
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
	e := newEnv(t, opts{openai: s})
	m := e.manager()
	mustCall(t, m, "create_agent", map[string]any{"provider": "codex", "cwd": t.TempDir(), "prompt": "ESCALATE-NOW", "name": "cx"}, nil)
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
// streamed into it and ends with the turn that takes it in, also while the
// run waits for a permission; cancel interrupts the turn and the process
// takes the next prompt; a process that answers nothing (stopped) is killed
// after cancel_grace, and the next prompt starts one that resumes the
// session; kill ends the process.
func TestRealClaudeSteer(t *testing.T) {
	t.Parallel()
	first, release := gate(t)
	s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		// An interrupted turn's prompt stays in the tail: the prompts that
		// come after one are looked for first, HANG- last.
		switch tail := r.Tail(); {
		case strings.Contains(tail, "AFTER-STOP"):
			if r.Has("THIRD-TASK") {
				return []standin.Block{standin.Text("RESUMED")}
			}
			return []standin.Block{standin.Text("FORGOT")}
		case strings.Contains(tail, "DURING-PERMISSION"):
			return []standin.Block{standin.Text("ANSWER-DURING")}
		case strings.Contains(tail, "NEED-PERMISSION"):
			return []standin.Block{standin.ToolUse("toolu_perm", "Bash", map[string]any{"command": "python3 -c \"open('perm','w')\"", "description": "write a file"})}
		case strings.Contains(tail, "AFTER-CANCEL"):
			return []standin.Block{standin.Text("ANSWER-4")}
		case strings.Contains(tail, "THIRD-TASK"):
			return []standin.Block{standin.Text("ANSWER-3")}
		case strings.Contains(tail, "SECOND-TASK"):
			return []standin.Block{standin.Text("ANSWER-2")}
		case strings.Contains(tail, "FIRST-TASK"):
			<-first // the first run goes on until the test has steered
			return []standin.Block{standin.ToolUse("toolu_chk", "mcp__parley__check_messages", nil)}
		case strings.Contains(tail, "HANG-"):
			hold(r, nil)
			return nil
		}
		if _, ok := r.Result("toolu_chk"); ok {
			return []standin.Block{standin.Text("ANSWER-1")}
		}
		if _, ok := r.Result("toolu_perm"); ok {
			return []standin.Block{standin.Text("DONE-PERM")}
		}
		return nil
	})
	// The default cancel_grace (5 s): on a loaded machine Claude Code may
	// take over a second to answer an interrupt, and this test wants it to.
	e := newEnv(t, opts{anthropic: s})
	m := e.manager()
	cwd := t.TempDir()
	startFirstTask(t, m, s, "claude", "cc", cwd)
	steerSecondTask(t, m, "cc", release)
	// Claude Code takes a prompt in at the next tool result, or else runs
	// it as a turn of its own once the first ends: run 1 ends either way.
	if w := waitRun(t, m, "cc", 1); w.LastMessage != "ANSWER-2" && w.LastMessage != "ANSWER-1" {
		t.Fatalf("run 1: got %q, want ANSWER-1 or ANSWER-2", w.LastMessage)
	}

	var pr api.PromptResult
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "cc", "prompt": "THIRD-TASK"}, &pr)
	if w := waitRun(t, m, "cc", pr.Run); w.LastMessage != "ANSWER-3" {
		t.Fatalf("run %d: got %q, want ANSWER-3", pr.Run, w.LastMessage)
	}

	// A run that waits for a permission takes a prompt in too.
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "cc", "prompt": "NEED-PERMISSION"}, &pr)
	w := wait(t, m, "cc")
	if w.Permission == nil {
		t.Fatalf("run %d: got %+v, want a permission request", pr.Run, w)
	}
	var during api.PromptResult
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "cc", "prompt": "DURING-PERMISSION"}, &during)
	if !during.Steered || during.Run != pr.Run+1 {
		t.Fatalf("send_agent_prompt during the permission wait: got %+v, want run %d steered into run %d", during, pr.Run+1, pr.Run)
	}
	e.Must("allow", w.Permission.RequestID)
	if w := waitRun(t, m, "cc", during.Run); w.LastMessage != "ANSWER-DURING" {
		t.Errorf("run %d: got %q, want the answer to the prompt streamed in", during.Run, w.LastMessage)
	}
	waitRun(t, m, "cc", pr.Run)
	if _, err := os.Stat(filepath.Join(cwd, "perm")); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
	act := activity(t, m, "cc")
	if !hasEvent(act, "steered", "DURING-PERMISSION") {
		t.Errorf("the timeline lacks the prompt streamed in during the permission wait:\n%s", act.Content)
	}
	cancelGoesOn(t, e, m, s, "cc")

	// A process that answers nothing is killed after the grace; the next
	// prompt starts another, which resumes the session.
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "cc", "prompt": "HANG-STOPPED"}, &pr)
	eventually(t, "the model is asked", e.asked("HANG-STOPPED"))
	stopped := e.leader(t, "cc")
	pause(t, stopped.pgid)
	mustCall(t, m, "cancel_agent", map[string]any{"agent_id": "cc"}, nil)
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": "cc", "run": pr.Run, "timeout": 60}, &w)
	if w.Run == nil || w.Run.State != "cancelled" {
		t.Fatalf("the stopped run: got %+v, want cancelled", w.Run)
	}
	eventually(t, "the stopped process to be killed", e.gone(t, "cc"))
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "cc", "prompt": "AFTER-STOP"}, &pr)
	if w := waitRun(t, m, "cc", pr.Run); w.LastMessage != "RESUMED" {
		t.Errorf("run %d in a new process: got %q, want the session resumed", pr.Run, w.LastMessage)
	}
	if p := e.leader(t, "cc"); p.pid == stopped.pid || sessionsStarted(t, e) != 2 {
		t.Errorf("after the stopped process: pid %d (before %d), %d session processes; want a second process", p.pid, stopped.pid, sessionsStarted(t, e))
	}

	// Kill ends the agent's process.
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "cc", "prompt": "HANG-KILLED"}, nil)
	eventually(t, "the model is asked", e.asked("HANG-KILLED"))
	mustCall(t, m, "kill_agent", map[string]any{"agent_id": "cc"}, nil)
	eventually(t, "the killed agent's process to end", e.gone(t, "cc"))
}

// TestRealCodexSteerMail: mail that comes while a steerable Codex agent is
// mid-turn is streamed into that turn (turn/steer) at once: the model reads
// it in the same run, which ends with its answer, and the delivery records
// the managed turn as its wake path.
func TestRealCodexSteerMail(t *testing.T) {
	t.Parallel()
	first, release := gate(t)
	s := standin.OpenAI(t, func(r *standin.ResponsesRequest) []standin.Item {
		switch {
		case r.Has("MAIL-FROM-ALICE"):
			return []standin.Item{standin.Message("READ-THE-MAIL")}
		case r.Has("FIRST-TASK"):
			<-first
			return []standin.Item{standin.Message("ANSWER-1")}
		}
		return nil
	})
	e := newEnv(t, opts{openai: s})
	m := e.manager()
	startFirstTask(t, m, s, "codexsteer", "cx", t.TempDir())
	mailMidTurn(t, e, m, "cx", release)
}

// TestRealClaudeSteerMail: mail that comes while a steerable Claude Code
// agent is mid-turn is written into its process at once (stream-json), and
// the model reads it at the turn's next tool result, in the same run.
func TestRealClaudeSteerMail(t *testing.T) {
	t.Parallel()
	first, release := gate(t)
	s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		switch {
		case r.Has("MAIL-FROM-ALICE"):
			return []standin.Block{standin.Text("READ-THE-MAIL")}
		case r.Has("FIRST-TASK"):
			if _, ok := r.ToolResult("toolu_chk"); ok {
				return []standin.Block{standin.Text("ANSWER-1")}
			}
			<-first
			return []standin.Block{standin.ToolUse("toolu_chk", "mcp__parley__check_messages", nil)}
		}
		return nil
	})
	e := newEnv(t, opts{anthropic: s})
	m := e.manager()
	startFirstTask(t, m, s, "claude", "cc", t.TempDir())
	mailMidTurn(t, e, m, "cc", release)
}

// gate is a channel a stand-in's reply waits on, and the function that
// opens it; it opens when the test ends, so that no reply is left waiting.
func gate(t *testing.T) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(ch) }) }
	t.Cleanup(open)
	return ch, open
}

// startFirstTask creates the steerable agent name with the prompt
// FIRST-TASK and returns once the model is asked it.
func startFirstTask(t *testing.T, m *mcp.ClientSession, s *standin.Server, provider, name, cwd string) {
	t.Helper()
	mustCall(t, m, "create_agent", map[string]any{"provider": provider, "cwd": cwd, "prompt": "FIRST-TASK", "name": name}, nil)
	eventually(t, "the model is asked the first task", func() bool { return s.Saw("FIRST-TASK") })
}

// steerSecondTask sends the prompt SECOND-TASK during run 1 (held by the
// stand-in until release), which must stream it in as run 2, and waits for
// run 2 to end with ANSWER-2.
func steerSecondTask(t *testing.T, m *mcp.ClientSession, name string, release func()) {
	t.Helper()
	var pr api.PromptResult
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": name, "prompt": "SECOND-TASK"}, &pr)
	if !pr.Steered || pr.Queued || pr.Run != 2 {
		t.Fatalf("send_agent_prompt during run 1: got %+v, want run 2 steered into it", pr)
	}
	release()
	if w := waitRun(t, m, name, 2); w.LastMessage != "ANSWER-2" {
		t.Fatalf("run 2: got %q, want ANSWER-2", w.LastMessage)
	}
}

// mailMidTurn sends the agent mail during run 1 (held by the stand-in until
// release), which must be streamed into run 1, whose turn then ends with the
// model's answer to it, READ-THE-MAIL; the mail is confirmed read, by the
// managed turn, once written.
func mailMidTurn(t *testing.T, e *env, m *mcp.ClientSession, name string, release func()) {
	t.Helper()
	var sent api.SendResult
	// Steer (a high message's default): a normal one waits for the run to end.
	e.MustJSON(&sent, "send", "--agent", "alice", "--deliver", "steer", name, "MAIL-FROM-ALICE")
	eventually(t, "the mail is streamed into run 1", func() bool { return hasEvent(activity(t, m, name), "steered", "MAIL-FROM-ALICE") })
	// Written into the turn is delivered: confirmed before the turn ends.
	var st api.MessageStatusResult
	eventually(t, "the streamed mail confirmed, by the managed turn", func() bool {
		e.MustJSON(&st, "delivery", sent.MessageID, "--agent", "alice")
		return len(st.Recipients) == 1 && st.Recipients[0].State == "read" && st.Recipients[0].WakePath == "managed" && st.Recipients[0].WokenAt != ""
	})
	release()
	w := waitRun(t, m, name, 1)
	if w.LastMessage != "READ-THE-MAIL" {
		t.Fatalf("run 1: got %q, want the model's answer to the mail, read in that run:\n%s", w.LastMessage, activity(t, m, name).Content)
	}
	var a struct{ Snapshot api.ManagedAgent }
	mustCall(t, m, "get_agent_status", map[string]any{"agent_id": name}, &a)
	if a.Snapshot.Runs != 2 || a.Snapshot.Status != "idle" {
		t.Errorf("after the run: %d runs, %s; want 2 (the first, and the mail streamed into it), idle", a.Snapshot.Runs, a.Snapshot.Status)
	}
}

// waitRun waits for run of agent name to end, and wants it completed.
func waitRun(t *testing.T, m *mcp.ClientSession, name string, run int) api.WaitAgentResult {
	t.Helper()
	var w api.WaitAgentResult
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": name, "run": run, "timeout": 60}, &w)
	if w.Run == nil || w.Run.State != "completed" {
		t.Fatalf("wait_for_agent %s run %d: got %+v (run %+v, permission %+v), want it completed", name, run, w, w.Run, w.Permission)
	}
	return w
}

// cancelGoesOn sends HANG-NOW (which the stand-in never answers) and
// cancels the run: the turn is interrupted, the same process takes the next
// prompt, AFTER-CANCEL (answered ANSWER-4), and one session process served
// every run.
func cancelGoesOn(t *testing.T, e *env, m *mcp.ClientSession, s *standin.Server, name string) {
	t.Helper()
	var pr api.PromptResult
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": name, "prompt": "HANG-NOW"}, &pr)
	eventually(t, "the model is asked to hang", func() bool { return s.Saw("HANG-NOW") })
	mustCall(t, m, "cancel_agent", map[string]any{"agent_id": name}, nil)
	var w api.WaitAgentResult
	mustCall(t, m, "wait_for_agent", map[string]any{"agent_id": name, "run": pr.Run, "timeout": 60}, &w)
	if w.Run == nil || w.Run.State != "cancelled" {
		t.Fatalf("the cancelled run: got %+v, want cancelled", w.Run)
	}
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": name, "prompt": "AFTER-CANCEL"}, &pr)
	if w = waitRun(t, m, name, pr.Run); w.LastMessage != "ANSWER-4" {
		t.Fatalf("the run after the cancel: got %q, want ANSWER-4", w.LastMessage)
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
