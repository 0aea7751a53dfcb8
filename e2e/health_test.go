package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
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
	out := &syncBuffer{}
	go io.Copy(out, e.startWatch(t, "--workspace", ws, "--kinds", kinds))
	return out.String
}

// startWatch runs `parley watch --json` with args until the test ends and
// returns its output, once the watch has subscribed (its "watching" line).
func (e *env) startWatch(tb testing.TB, args ...string) io.Reader {
	tb.Helper()
	c := e.Cmd(append([]string{"watch", "--json"}, args...)...)
	out, err := c.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	errs, err := c.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Process.Kill(); c.Wait() })
	said := &syncBuffer{}
	subscribed := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(errs)
		for sc.Scan() {
			fmt.Fprintln(said, sc.Text())
			if strings.Contains(sc.Text(), "watching") {
				subscribed <- true
				io.Copy(io.Discard, errs)
				return
			}
		}
		subscribed <- false // it ended first
	}()
	select {
	case ok := <-subscribed:
		if !ok {
			tb.Fatalf("parley watch %s ended before it subscribed: %s", strings.Join(args, " "), said.String())
		}
	case <-time.After(20 * time.Second):
		tb.Fatalf("parley watch %s did not subscribe within 20 s: %s", strings.Join(args, " "), said.String())
	}
	return out
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
	// The stall's first rung nudged quiet with a message: its Stop blocks
	// on it (so the turn goes on); the second Stop ends the turn: idle.
	if out, _ := e.hook(t, "Stop", map[string]any{"stop_hook_active": false}, as("quiet")...); !strings.Contains(out, "new from parley") {
		t.Errorf("quiet's Stop: got %q, want it blocked by parley's nudge", out)
	}
	if got := e.healthOf(t, ws, "quiet"); got != "working" {
		t.Errorf("quiet after a blocked Stop: got %q, want working", got)
	}
	e.hook(t, "Stop", map[string]any{"stop_hook_active": true}, as("quiet")...)
	if got := e.healthOf(t, ws, "quiet"); got != "idle" {
		t.Errorf("quiet after Stop: got %q, want idle", got)
	}
	for _, ev := range eventsOf(events()) {
		if strings.Contains(ev, "waiter") {
			t.Errorf("events: %s, want no stall of waiter", ev)
		}
	}
}

// TestEscalationLadder: a stalled agent is nudged, then its lead is told,
// then the person gets a push notice, one step every [escalation] every; a
// permission request nobody answers climbs the ladder from the lead. Each
// step is an agent.escalated event.
func TestEscalationLadder(t *testing.T) {
	notices := make(chan map[string]any, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n map[string]any
		json.NewDecoder(r.Body).Decode(&n)
		notices <- n
	}))
	defer srv.Close()
	e := newEnv(t)
	writeFile(t, filepath.Join(e.home, "config.toml"), fmt.Sprintf(`stall_after = "1s"

[escalation]
every = "1s"
permission_after = "1s"
lead = "@lead"

[[notify]]
url = %q
`, srv.URL))
	const ws = "ladder"
	e.Must("join", "--name", "quiet", "--role", "dev", "--workspace", ws)
	e.Must("join", "--name", "boss", "--role", "lead", "--workspace", ws)
	events := e.watchEvents(t, ws, "agent.escalated")
	e.hook(t, "UserPromptSubmit", map[string]any{"prompt": "go"}, "--agent", "quiet", "--workspace", ws)

	steps := func() []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(events()), "\n") {
			var ev struct{ Agent, Status, Change, Text string }
			if json.Unmarshal([]byte(l), &ev) == nil {
				out = append(out, ev.Change+" "+ev.Agent+" "+ev.Status)
			}
		}
		return out
	}
	waitFor(t, 30*time.Second, "the stall's nudge, lead and person steps", func() (bool, string) {
		s := steps()
		return slices.Contains(s, "stall quiet person"), strings.Join(s, "; ")
	})
	if s := steps(); !slices.Equal(s[:3], []string{"stall quiet nudge", "stall quiet lead", "stall quiet person"}) {
		t.Errorf("steps: got %v, want nudge, lead, person in that order", s)
	}
	// The nudge is a message in quiet's inbox, the lead's a message to boss.
	var inbox struct {
		Messages []struct{ From, Content string } `json:"messages"`
	}
	e.MustJSON(&inbox, "inbox", "--agent", "quiet", "--workspace", ws, "--peek")
	if len(inbox.Messages) != 1 || inbox.Messages[0].From != "parley" || !strings.Contains(inbox.Messages[0].Content, "no progress") {
		t.Errorf("quiet's inbox: got %+v, want parley's nudge", inbox.Messages)
	}
	e.MustJSON(&inbox, "inbox", "--agent", "boss", "--workspace", ws, "--peek")
	if len(inbox.Messages) != 1 || !strings.Contains(inbox.Messages[0].Content, "quiet has shown no progress") {
		t.Errorf("boss's inbox: got %+v, want the escalation about quiet", inbox.Messages)
	}
	select {
	case n := <-notices:
		if n["kind"] != "agent_stalled" || n["agent"] != "quiet" {
			t.Errorf("push notice: got %v, want agent_stalled for quiet", n)
		}
	case <-time.After(10 * time.Second):
		t.Error("no push notice reached the endpoint")
	}

	// A permission request nobody answers: the lead hears of it.
	h := e.Cmd("hook", "claude", "PermissionRequest", "--agent", "quiet", "--workspace", ws, "--wait", "30s")
	h.Stdin = strings.NewReader(`{"session_id":"s","cwd":"` + e.home + `","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"rm -rf build"}}`)
	out := &syncBuffer{}
	h.Stdout = out
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	defer h.Process.Kill()
	waitFor(t, 30*time.Second, "the permission request's lead step", func() (bool, string) {
		s := steps()
		return slices.Contains(s, "permission quiet lead"), strings.Join(s, "; ")
	})
	var pending struct {
		Permissions []struct {
			Request struct {
				ID string `json:"request_id"`
			} `json:"request"`
		} `json:"permissions"`
	}
	e.MustJSON(&pending, "permissions", "--workspace", ws)
	if len(pending.Permissions) != 1 {
		t.Fatalf("pending requests: got %+v, want 1", pending)
	}
	reqID := pending.Permissions[0].Request.ID
	e.MustJSON(&inbox, "inbox", "--agent", "boss", "--workspace", ws, "--peek")
	if !slices.ContainsFunc(inbox.Messages, func(m struct{ From, Content string }) bool {
		return strings.Contains(m.Content, reqID) && strings.Contains(m.Content, "Bash")
	}) {
		t.Errorf("boss's inbox: got %+v, want the request %s named", inbox.Messages, reqID)
	}
	e.Must("allow", reqID)
	h.Wait()
	if !strings.Contains(out.String(), `"behavior":"allow"`) {
		t.Errorf("hook output after the allow: %q", out.String())
	}
}
