package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// healthOf is the agent's health as `parley agents --json` shows it.
func (e *env) healthOf(t *testing.T, ws, agent string) string {
	t.Helper()
	var list struct {
		Agents []struct {
			Name   string `json:"name"`
			Health string `json:"health"`
		} `json:"agents"`
	}
	e.MustJSON(&list, "agents", "--workspace", ws)
	for _, a := range list.Agents {
		if a.Name == agent {
			return a.Health
		}
	}
	return ""
}

// watchEvents runs `parley watch --json` for the kinds in ws and returns
// its output so far, as the test goes.
func (e *env) watchEvents(t *testing.T, ws, kinds string) func() string {
	t.Helper()
	c := e.Cmd("watch", "--workspace", ws, "--kinds", kinds, "--json")
	out, errs := &syncBuffer{}, &syncBuffer{}
	c.Stdout, c.Stderr = out, errs
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	waitUntil(t, "the watch to subscribe", func() bool { return strings.Contains(errs.String(), "watching") })
	return out.String
}

// eventsOf are the (kind, agent, status) of the JSON lines of a watch.
func eventsOf(out string) []string {
	var evs []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct{ Kind, Agent, Status, Text string }
		if json.Unmarshal([]byte(l), &e) == nil {
			evs = append(evs, e.Kind+" "+e.Agent+" "+e.Status)
		}
	}
	return evs
}

// TestHealthStalls: an agent whose hooks report a prompt and then nothing
// goes stalled after stall_after, with an agent.stalled event; one blocked
// in a wait, or in a tool call, does not.
func TestHealthStalls(t *testing.T) {
	e := newEnv(t)
	writeFile(t, filepath.Join(e.home, "config.toml"), "stall_after = \"1s\"\n")
	const ws = "health"
	for _, n := range []string{"quiet", "waiter", "tooler"} {
		e.Must("join", "--name", n, "--role", "dev", "--workspace", ws)
	}
	events := e.watchEvents(t, ws, "agent.stalled")
	as := func(n string) []string { return []string{"--agent", n, "--workspace", ws} }

	// waiter and tooler start their turns, then block in a wait and run a
	// long tool; quiet's prompt comes last, so that when quiet stalls, the
	// others have been as quiet for as long.
	e.hook(t, "UserPromptSubmit", map[string]any{"prompt": "go"}, as("waiter")...)
	e.hook(t, "UserPromptSubmit", map[string]any{"prompt": "go"}, as("tooler")...)
	e.hook(t, "PreToolUse", map[string]any{"tool_name": "Bash", "tool_use_id": "toolu_9", "tool_input": map[string]any{"command": "make"}},
		append(as("tooler"), "--policy", "off")...)
	wait := e.Cmd("wait", "--agent", "waiter", "--workspace", ws, "--timeout", "60s")
	if err := wait.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wait.Process.Kill(); wait.Wait() })
	waitForWaiter(t, e, ws, "waiter")
	e.hook(t, "UserPromptSubmit", map[string]any{"prompt": "go"}, as("quiet")...)
	if got := e.healthOf(t, ws, "quiet"); got != "working" {
		t.Errorf("quiet right after its prompt: got %q, want working", got)
	}

	waitFor(t, 20*time.Second, "quiet to stall", func() (bool, string) {
		h := e.healthOf(t, ws, "quiet")
		return h == "stalled", h
	})
	if got := e.healthOf(t, ws, "waiter"); got != "waiting" {
		t.Errorf("waiter, blocked in a wait: got %q, want waiting", got)
	}
	if got := e.healthOf(t, ws, "tooler"); got != "working" {
		t.Errorf("tooler, in a tool call: got %q, want working", got)
	}
	waitFor(t, 10*time.Second, "the agent.stalled event of quiet", func() (bool, string) {
		evs := eventsOf(events())
		return len(evs) > 0, strings.Join(evs, "; ")
	})

	// list_agents says the same.
	s := e.Session(nil, "--agent", "lead", "--workspace", ws)
	var list struct {
		Agents []struct{ Name, Health string }
	}
	mustCall(t, s, "list_agents", nil, &list)
	for _, a := range list.Agents {
		if a.Name == "quiet" && a.Health != "stalled" {
			t.Errorf("list_agents: quiet is %q, want stalled", a.Health)
		}
	}

	// The tool ends: tooler's clock starts again, and it stalls in turn.
	e.hook(t, "PostToolUse", map[string]any{"tool_name": "Bash", "tool_use_id": "toolu_9"}, as("tooler")...)
	waitFor(t, 20*time.Second, "tooler to stall after its tool", func() (bool, string) {
		h := e.healthOf(t, ws, "tooler")
		return h == "stalled", h
	})
	// Stop ends quiet's turn: idle, not stalled.
	e.hook(t, "Stop", map[string]any{"stop_hook_active": false}, as("quiet")...)
	if got := e.healthOf(t, ws, "quiet"); got != "idle" {
		t.Errorf("quiet after Stop: got %q, want idle", got)
	}
	for _, ev := range eventsOf(events()) {
		if strings.Contains(ev, "waiter") {
			t.Errorf("events: %s, want no stall of waiter", ev)
		}
	}
}
