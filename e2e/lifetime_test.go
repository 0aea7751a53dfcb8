package e2e

// A client session's agent lives as long as the session: reachable from its
// first second, gone when it ends. With the real Codex and Claude Code
// (test/npm) in tmux, set up by a zero-flag `parley init`, the model
// replaced by a stand-in.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/door"
	"github.com/parley-dev/parley/internal/testenv/standin"
	"github.com/parley-dev/parley/internal/testenv/tmuxcli"
	"github.com/parley-dev/parley/internal/workspace"
)

// TestCodexSessionLifetime: a zero-flag `parley init codex` names no agent:
// a fresh Codex session is its thread's agent, registered with its door by
// the SessionStart hook at the thread's start, so that mail reaches it
// before it ever called a Parley tool (the letter starts a turn, which
// reads it), and not as alice, whose identity file a person made there.
// `codex mcp list` registers no agent. After /quit, Codex's app-server keeps running but unloads the
// thread (init set thread_unload_delay_secs = 0): the door closes, the
// thread's MCP server exits, and a later message is neither written
// through the door nor read; it waits in the inbox.
func TestCodexSessionLifetime(t *testing.T) {
	e := newEnv(t)
	repo := initRepo(t, e)
	codexHome := e.withCodex(t)
	// A person joined here as alice: her identity file is not the thread's.
	if out, errs, code := e.runIn(repo, "join", "--name", "alice", "--role", "lead"); code != 0 {
		t.Fatalf("join alice: exit %d %s%s", code, out, errs)
	}
	e.sendIn(t, repo, "alice", "MAIL-FOR-ALICE only hers", "--agent", "boss")
	out, errs, code := e.runIn(repo, "init", "codex", "--yes")
	if code != 0 || !strings.Contains(out, "Codex now trusts Parley's SessionStart hook") || !strings.Contains(out, "each codex session takes a name of its own") {
		t.Fatalf("init codex: exit %d, want 0, the SessionStart hook trusted and no name baked in\n%s%s", code, out, errs)
	}
	conf, _ := os.ReadFile(filepath.Join(codexHome, "config.toml"))
	if !strings.Contains(string(conf), `args = ["mcp", "serve"]`) || !strings.Contains(string(conf), "thread_unload_delay_secs = 0") || strings.Contains(string(conf), "--agent") {
		t.Fatalf("config.toml:\n%s", conf)
	}
	var m model
	var mu sync.Mutex
	calls := 0
	s := standin.OpenAI(t, func(r *standin.ResponsesRequest) []standin.Item {
		tail := r.Tail()
		m.add(tail)
		switch {
		case strings.Contains(tail, door.LetterMarker):
			mu.Lock()
			calls++
			id := fmt.Sprintf("call_check_%d", calls)
			mu.Unlock()
			return []standin.Item{standin.FunctionCall(id, "mcp__parley", "check_messages", map[string]any{})}
		case strings.Contains(tail, "MAIL-"):
			return []standin.Item{standin.Message("READ THE MAIL")}
		}
		return []standin.Item{standin.Message("HELLO BACK")}
	})
	tm := tmuxcli.NewServer(t)
	cx := tm.StartCodex("cx", s, tmuxcli.CodexOptions{Dir: repo, Home: codexHome, Env: []string{"PARLEY_HOME=" + e.home}})
	cx.Type("FIRST-TURN hello")
	cx.WaitScreen(60*time.Second, "HELLO BACK")
	thread := cx.Thread()
	ts, _ := workspace.FindSession(workspace.CodexThreadEnv(thread))
	agent := ts.Name(repo)
	d := e.waitDoor(t, repo, agent, "codex", cx.Screen)
	if d.Session != thread || d.Address != codexHome || d.ByMCP {
		t.Errorf("door: %+v, want thread %s in %s, registered by the SessionStart hook", d, thread, codexHome)
	}
	mu.Lock()
	if calls != 0 {
		t.Fatalf("the model called a Parley tool before any mail; the test means to reach it before")
	}
	mu.Unlock()

	// Reachable before its first tool call: the letter starts a turn.
	id := e.sendIn(t, repo, agent, "MAIL-ONE please look", "--agent", "boss")
	m.wait(t, 90*time.Second, cx.Screen, "MAIL-ONE please look", "boss") // check_messages' result
	waitFor(t, 30*time.Second, "the copy read, through the door", func() (bool, string) {
		c := e.copyStatus(t, repo, "boss", id, agent)
		return c.State == "read" && c.WakePath == "door:codex", fmt.Sprintf("%+v", c)
	})

	// It read its own mail, not alice's, which waits for her.
	if m.find("MAIL-FOR-ALICE") != "" {
		t.Error("the Codex session read alice's mail")
	}
	if out, _, _ := e.runIn(repo, "inbox", "--peek", "--json"); !strings.Contains(out, "MAIL-FOR-ALICE") {
		t.Errorf("alice's inbox at her terminal: %s, want her message still there", out)
	}
	// `codex mcp list`, a health check, registers no agent (0.171.0 lists
	// the configuration and starts no server).
	agentsNow := func() string {
		var res api.ListAgentsResult
		out, _, _ := e.runIn(repo, "agents", "--json")
		json.Unmarshal([]byte(out), &res)
		var names []string
		for _, a := range res.Agents {
			names = append(names, a.Name)
		}
		return fmt.Sprint(slices.Sorted(slices.Values(names)))
	}
	before := agentsNow()
	lc := exec.Command(standin.CLI(t, "codex"), "mcp", "list")
	lc.Dir = repo
	lc.Env = append(os.Environ(), "CODEX_HOME="+codexHome, "PARLEY_HOME="+e.home)
	if out, err := lc.CombinedOutput(); err != nil || !strings.Contains(string(out), "parley") {
		t.Fatalf("codex mcp list: %v\n%s", err, out)
	}
	if after := agentsNow(); after != before {
		t.Errorf("agents after codex mcp list: %s, want %s", after, before)
	}

	// /quit: the app-server stays, the thread is unloaded, the door closes.
	cx.WaitScreen(30*time.Second, "READ THE MAIL")
	cx.Type("/quit")
	waitFor(t, 60*time.Second, "the Codex door closed after /quit", func() (bool, string) {
		out, _, _ := e.runIn(repo, "doors", "--all", "--closed", "--json")
		var res api.DoorsResult
		json.Unmarshal([]byte(out), &res)
		for _, x := range res.Doors {
			if x.ID == d.ID {
				return x.ClosedAt != "" && x.CloseReason == "session ended", out
			}
		}
		return false, out
	})
	waitFor(t, 30*time.Second, agent+" offline (its MCP server exited with the thread)", func() (bool, string) {
		var res api.ListAgentsResult
		out, _, _ := e.runIn(repo, "agents", "--json")
		json.Unmarshal([]byte(out), &res)
		for _, a := range res.Agents {
			if a.Name == agent {
				return a.Status == "offline", out
			}
		}
		return false, out
	})
	later := e.sendIn(t, repo, agent, "MAIL-LATER after quit", "--agent", "boss")
	// Nothing may write it, nor read it: watch a while.
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		if c := e.copyStatus(t, repo, "boss", later, agent); c.State != "queued" || c.WakePath != "" {
			t.Fatalf("the message sent after /quit: %+v, want it queued, untouched", c)
		}
		if m.find("MAIL-LATER") != "" {
			t.Fatal("the model saw the message sent after /quit: a turn nobody watches")
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestClaudeSessionsAreTheirOwn: in a checkout where a person joined as
// alice, a zero-flag `parley init claude` bakes no name; two Claude Code
// sessions started there, each in a tmux window named claude, are two
// agents named after their sessions (not alice, not the window), each with
// its own door, and a letter to one starts a turn in that one only, which
// reads its own mail and not alice's. `claude mcp list`, a health check,
// registers no agent. A session that ends closes its door and @everyone
// skips it; its agent, had it never made a call, is forgotten by itself,
// else by `parley agents forget`.
func TestClaudeSessionsAreTheirOwn(t *testing.T) {
	claude := standin.CLI(t, "claude")
	e := newEnv(t)
	writeFile(t, filepath.Join(e.home, "config.toml"), "unused_agent_grace = \"2s\"\n")
	repo := initRepo(t, e)
	if out, errs, code := e.runIn(repo, "join", "--name", "alice", "--role", "lead"); code != 0 {
		t.Fatalf("join alice: exit %d %s%s", code, out, errs)
	}
	e.sendIn(t, repo, "alice", "MAIL-FOR-ALICE only hers", "--agent", "boss")
	out, errs, code := e.runIn(repo, "init", "claude", "--yes")
	if code != 0 || !strings.Contains(out, "Not baking in alice") {
		t.Fatalf("init claude: exit %d\n%s%s", code, out, errs)
	}
	if args := readJSON(t, filepath.Join(repo, ".mcp.json"))["mcpServers"].(map[string]any)["parley"].(map[string]any)["args"]; fmt.Sprint(args) != "[mcp serve]" {
		t.Errorf(".mcp.json args: %v, want no name baked in", args)
	}
	writeFile(t, filepath.Join(repo, ".claude", "settings.local.json"), `{"enabledMcpjsonServers":["parley"]}`)

	var m model
	var mu sync.Mutex
	checks := 0
	s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		tail := r.Tail()
		m.add(tail)
		switch {
		case strings.Contains(tail, door.LetterMarker):
			mu.Lock()
			checks++
			id := fmt.Sprintf("toolu_check_%d", checks)
			mu.Unlock()
			return []standin.Block{standin.ToolUse(id, "mcp__parley__check_messages", nil)}
		case strings.Contains(tail, "MAIL-"):
			return []standin.Block{standin.Text("READ THE MAIL")}
		}
		return nil
	})
	claudeHome := filepath.Join(e.home, "claude")
	sessions := map[string]string{"one": "6f1c9a52-0d3e-4b7a-9c1e-2f4b5d6e7a80", "two": "0b6e2d41-7c8f-4a1b-8e2d-3c4f5a6b7c8d"}
	name := func(sid string) string {
		s, _ := workspace.FindSession(func(k string) string {
			if k == "CLAUDE_CODE_SESSION_ID" {
				return sid
			}
			return ""
		})
		return s.Name(repo)
	}
	tm := tmuxcli.NewServer(t)
	panes := map[string]*tmuxcli.Claude{}
	doors := map[string]api.DoorInfo{}
	for _, p := range []string{"one", "two"} {
		panes[p] = tm.StartClaude(p, s, tmuxcli.ClaudeOptions{Dir: repo, Home: claudeHome, Window: "claude",
			Env: []string{"PARLEY_HOME=" + e.home}, Args: []string{"--session-id", sessions[p]}})
	}
	for _, p := range []string{"one", "two"} {
		doors[p] = e.waitDoor(t, repo, name(sessions[p]), "claude", panes[p].Screen)
		// (Each runs inside tmux, as its window's program sees it.)
		if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", panes[p].PID)); err == nil && !strings.Contains(string(env), "\x00TMUX_PANE=%") {
			t.Errorf("session %s does not see tmux: %q", p, env)
		}
	}
	if doors["one"].Address == doors["two"].Address || !doors["one"].ByMCP || !doors["two"].ByMCP {
		t.Errorf("doors: %+v and %+v, want each session's own inbox, registered by its MCP server", doors["one"], doors["two"])
	}
	agentNames := func() []string {
		var res api.ListAgentsResult
		out, _, _ := e.runIn(repo, "agents", "--json")
		json.Unmarshal([]byte(out), &res)
		var names []string
		for _, a := range res.Agents {
			names = append(names, a.Name)
		}
		return names
	}
	sortedWant := fmt.Sprint(slices.Sorted(slices.Values([]string{"alice", name(sessions["one"]), name(sessions["two"])})))
	if got := fmt.Sprint(agentNames()); got != sortedWant {
		t.Errorf("agents: %s, want %s (two session agents; not alice, nor the window's name)", got, sortedWant)
	}

	// A letter to session one's agent: one reads its own mail, two sleeps,
	// alice's waits for her.
	id := e.sendIn(t, repo, name(sessions["one"]), "MAIL-ONE for session one", "--agent", "boss")
	m.wait(t, 90*time.Second, panes["one"].Screen, "MAIL-ONE for session one", "boss") // check_messages' result
	waitFor(t, 30*time.Second, "session one's copy read through its door", func() (bool, string) {
		c := e.copyStatus(t, repo, "boss", id, name(sessions["one"]))
		return c.State == "read" && c.WakePath == "door:claude", fmt.Sprintf("%+v", c)
	})
	if m.find("MAIL-FOR-ALICE") != "" {
		t.Error("a session read alice's mail")
	}
	if out, _, _ := e.runIn(repo, "inbox", "--peek", "--json"); !strings.Contains(out, "MAIL-FOR-ALICE") {
		t.Errorf("alice's inbox at her terminal: %s, want her message still there", out)
	}

	// A health check starts the server and lists its tools: no agent.
	c := exec.Command(claude, "mcp", "list")
	c.Dir = repo
	c.Env = append(standin.ClaudeEnv(s, claudeHome), "PATH="+os.Getenv("PATH"), "PARLEY_HOME="+e.home)
	if out, err := c.CombinedOutput(); err != nil || !strings.Contains(string(out), "Connected") {
		t.Fatalf("claude mcp list: %v\n%s", err, out)
	}
	if got := fmt.Sprint(agentNames()); got != sortedWant {
		t.Errorf("agents after claude mcp list: %s, want %s still", got, sortedWant)
	}

	// Session two ends without a word: its door closes, @everyone skips
	// it, and, never having made a call, its agent is forgotten once
	// unused_agent_grace has passed.
	doorClosed := func(id string) func() (bool, string) {
		return func() (bool, string) {
			out, _, _ := e.runIn(repo, "doors", "--all", "--closed", "--json")
			var res api.DoorsResult
			json.Unmarshal([]byte(out), &res)
			for _, x := range res.Doors {
				if x.ID == id {
					return x.ClosedAt != "", out
				}
			}
			return false, out
		}
	}
	panes["two"].Type("/exit")
	waitFor(t, 30*time.Second, "session two exited on /exit", func() (bool, string) { return !panes["two"].Alive(), panes["two"].Screen() })
	waitFor(t, 30*time.Second, "session two's door closed", doorClosed(doors["two"].ID))
	out, errs, code = e.runIn(repo, "send", "@everyone", "MAIL-EVERYONE all hands", "--agent", "boss", "--json")
	var all api.SendResult
	json.Unmarshal([]byte(out), &all)
	if want := fmt.Sprint(slices.Sorted(slices.Values([]string{"alice", name(sessions["one"])}))); code != 0 || fmt.Sprint(slices.Sorted(slices.Values(all.Recipients))) != want {
		t.Errorf("@everyone after session two ended: exit %d %s %s, want %s", code, out, errs, want)
	}
	waitFor(t, 30*time.Second, "session two's unused agent forgotten", func() (bool, string) {
		names := agentNames()
		return !slices.Contains(names, name(sessions["two"])) && slices.Contains(names, name(sessions["one"])), fmt.Sprint(names)
	})

	// parley agents forget: refused while session one lives, done once it
	// ended; a name nobody has is not found.
	if out, errs, code := e.runIn(repo, "agents", "forget", name(sessions["one"])); code != 5 || !strings.Contains(errs, "live session") {
		t.Errorf("agents forget with its session live: exit %d %s %s, want 5 (conflict) and why", code, out, errs)
	}
	panes["one"].Type("/exit")
	waitFor(t, 30*time.Second, "session one exited on /exit", func() (bool, string) { return !panes["one"].Alive(), panes["one"].Screen() })
	waitFor(t, 30*time.Second, "session one's door closed", doorClosed(doors["one"].ID))
	if out, errs, code := e.runIn(repo, "agents", "forget", name(sessions["one"])); code != 0 || !strings.Contains(out, "forgot "+name(sessions["one"])) {
		t.Errorf("agents forget after its session ended: exit %d %s %s", code, out, errs)
	}
	if got := fmt.Sprint(agentNames()); got != "[alice]" {
		t.Errorf("agents after forget: %s, want [alice]", got)
	}
	if out, errs, code := e.runIn(repo, "agents", "forget", "nobody"); code != 4 {
		t.Errorf("agents forget nobody: exit %d %s %s, want 4 (not found)", code, out, errs)
	}
}
