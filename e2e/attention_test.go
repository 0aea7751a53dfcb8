package e2e

// Reaching an agent's attention through its session's own door, with the
// real Claude Code and Codex CLIs (test/npm) running interactively in tmux,
// set up by `parley init` alone, the model replaced by a stand-in that
// answers a letter by calling check_messages.

import (
	"encoding/json"
	"fmt"
	"os"
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
)

// model records what a stand-in was asked, by the text each request adds.
type model struct {
	mu    sync.Mutex
	tails []string
	calls int
}

func (m *model) add(tail string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tails = append(m.tails, tail)
	m.calls++
	return m.calls
}

// find returns the first request tail with every one of subs, or "".
func (m *model) find(subs ...string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
outer:
	for _, t := range m.tails {
		for _, s := range subs {
			if !strings.Contains(t, s) {
				continue outer
			}
		}
		return t
	}
	return ""
}

func (m *model) wait(t *testing.T, within time.Duration, screen func() string, subs ...string) string {
	t.Helper()
	var got string
	waitFor(t, within, fmt.Sprintf("a model request with %q", subs), func() (bool, string) {
		got = m.find(subs...)
		return got != "", screen()
	})
	return got
}

// status is the recipient's copy of a message, as its sender sees it.
func (e *env) copyStatus(t *testing.T, dir, from, id, to string, more ...string) api.RecipientDelivery {
	t.Helper()
	out, errs, code := e.runIn(dir, append([]string{"delivery", id, "--agent", from, "--json"}, more...)...)
	if code != 0 {
		t.Fatalf("parley delivery: exit %d %s", code, errs)
	}
	var st api.MessageStatusResult
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("parley delivery --json: %v\n%s", err, out)
	}
	for _, r := range st.Recipients {
		if r.Recipient == to {
			return r
		}
	}
	t.Fatalf("no copy for %s in %s", to, out)
	return api.RecipientDelivery{}
}

func (e *env) sendIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, errs, code := e.runIn(dir, append([]string{"send", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("parley send %v: exit %d %s", args, code, errs)
	}
	var res api.SendResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("send --json: %v\n%s", err, out)
	}
	return res.MessageID
}

// waitDoor waits for the agent's session to register a door of kind.
func (e *env) waitDoor(t *testing.T, dir, agent, kind string, screen func() string) api.DoorInfo {
	t.Helper()
	var d api.DoorInfo
	waitFor(t, 60*time.Second, agent+"'s "+kind+" door", func() (bool, string) {
		out, _, code := e.runIn(dir, "doors", "--all", "--json")
		var res api.DoorsResult
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
			return false, out
		}
		for _, x := range res.Doors {
			if x.Agent == agent && x.Kind == kind {
				d = x
				return true, ""
			}
		}
		return false, out + "\n" + screen()
	})
	return d
}

// TestDoorClaude: an interactive Claude Code session that `parley init
// claude` set up (no channel, no tmux nudge) gets its agent's mail through
// its inbox socket: idle, it starts a turn with the letter; busy, the letter
// rides in its next model request, between tool calls. The sender sees the
// door and "seen" in message_status.
func TestDoorClaude(t *testing.T) {
	e := newEnv(t)
	repo := initRepo(t, e)
	if out, errs, code := e.runIn(repo, "init", "claude", "--agent", "lead", "--yes"); code != 0 {
		t.Fatalf("init claude: exit %d\n%s%s", code, out, errs)
	}
	writeFile(t, filepath.Join(repo, ".claude", "settings.local.json"), `{"enabledMcpjsonServers":["parley"],"permissions":{"allow":["Bash"]}}`)

	var m model
	var mu sync.Mutex
	checks := 0
	s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		tail := r.Tail()
		m.add(tail)
		switch {
		case strings.Contains(tail, "SLEEP-PLEASE") && !strings.Contains(tail, "SLEPT"):
			return []standin.Block{standin.ToolUse("toolu_sleep", "Bash", map[string]any{"command": "touch sleeping; sleep 6; echo SLEPT", "description": "sleep"})}
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
	tm := tmuxcli.NewServer(t)
	cc := tm.StartClaude("lead", s, tmuxcli.ClaudeOptions{Dir: repo, Home: filepath.Join(e.home, "claude"),
		Env: []string{"PARLEY_HOME=" + e.home}})
	d := e.waitDoor(t, repo, "lead", "claude", cc.Screen)
	sent := sentLog{}
	defer e.noFalseSeen(t, repo, "boss", "lead", &m, sent)
	if !d.ByMCP || !strings.HasSuffix(d.Address, ".sock") {
		t.Errorf("door: got %+v, want the inbox socket, registered by parley mcp serve", d)
	}

	t.Run("idle session starts a turn", func(t *testing.T) {
		id := e.sendIn(t, repo, "lead", "MAIL-IDLE please look", "--agent", "boss")
		sent[id] = "MAIL-IDLE please look"
		letter := m.wait(t, 60*time.Second, cc.Screen, door.LetterMarker, "MAIL-IDLE please look")
		if !strings.Contains(letter, "boss (agent") || !strings.Contains(letter, "check_messages") {
			t.Errorf("the letter the model got:\n%s", letter)
		}
		m.wait(t, 60*time.Second, cc.Screen, "MAIL-IDLE please look", "boss") // check_messages' result
		waitFor(t, 30*time.Second, "the copy read, seen, through the door", func() (bool, string) {
			c := e.copyStatus(t, repo, "boss", id, "lead")
			return c.State == "read" && c.WakePath == "door:claude" && c.SeenAt != "", fmt.Sprintf("%+v", c)
		})
	})

	t.Run("busy session gets it before its next model request", func(t *testing.T) {
		cc.WaitScreen(30*time.Second, "READ THE MAIL")
		cc.Type("SLEEP-PLEASE")
		waitFileE2E(t, filepath.Join(repo, "sleeping"))
		id := e.sendIn(t, repo, "lead", "MAIL-BUSY stop that", "--agent", "boss", "--deliver", "steer")
		sent[id] = "MAIL-BUSY stop that"
		// The request right after the tool's result carries the letter.
		tail := m.wait(t, 60*time.Second, cc.Screen, "SLEPT")
		if !strings.Contains(tail, door.LetterMarker) || !strings.Contains(tail, "MAIL-BUSY stop that") {
			t.Errorf("the request after the tool call lacks the letter:\n%s", tail)
		}
		waitFor(t, 60*time.Second, "the copy read, seen, through the door", func() (bool, string) {
			c := e.copyStatus(t, repo, "boss", id, "lead")
			return c.State == "read" && c.WakePath == "door:claude" && c.SeenAt != "", fmt.Sprintf("%+v", c)
		})
	})

	t.Run("the door closes with the session", func(t *testing.T) {
		cc.Kill()
		waitFor(t, 30*time.Second, "the door closed", func() (bool, string) {
			out, _, _ := e.runIn(repo, "doors", "--all", "--closed", "--json")
			var res api.DoorsResult
			json.Unmarshal([]byte(out), &res)
			for _, x := range res.Doors {
				if x.ID == d.ID {
					return x.ClosedAt != "", out
				}
			}
			return false, out
		})
	})
}

// TestDoorClaudeBypass: an interactive Claude Code session in
// bypassPermissions, set up by `parley init claude`, holds Parley's letters
// for its person: it says so on the letter's reply address, and the copy
// reads held within seconds, with why and how to let letters in, while the
// model has not seen it. Approved in the session, the letter starts a turn:
// seen. Denied, the copy is declined, never seen; the sender gets a bounce
// that says so, `parley bounced` lists it, and `parley redeliver` sends it
// again (held again: the session has not changed its mind). No letter
// asserts a permission mode: the session holds them for that very reason.
func TestDoorClaudeBypass(t *testing.T) {
	e := newEnv(t)
	repo := initRepo(t, e)
	if out, errs, code := e.runIn(repo, "init", "claude", "--agent", "held-cc", "--yes"); code != 0 {
		t.Fatalf("init claude: exit %d\n%s%s", code, out, errs)
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
	// The session's own MCP server starts the daemon, as on a first run: it
	// is no descendant of the session (Claude Code would take its letters
	// as its own, no hold), as TestDaemonDescendsFromNoSession checks.
	// TestDoorClaudeBypassAccept runs one apart from the session, as a
	// team's does.
	tm := tmuxcli.NewServer(t)
	debug := filepath.Join(tm.Dir(), "cc-debug.log")
	cc := tm.StartClaude("held", s, tmuxcli.ClaudeOptions{Dir: repo, Home: filepath.Join(e.home, "claude"),
		PermissionMode: "bypassPermissions", Args: []string{"--debug-file", debug}, Env: []string{"PARLEY_HOME=" + e.home}})
	e.waitDoor(t, repo, "held-cc", "claude", cc.Screen)
	sent := sentLog{}
	defer e.noFalseSeen(t, repo, "boss", "held-cc", &m, sent)
	// Its SessionStart hook told the person at once, and what to change.
	cc.WaitScreen(20*time.Second, `Parley: sessions here run in bypassPermissions`)
	if out, _, _ := e.runIn(repo, "doctor"); !strings.Contains(out, "claude letters") {
		t.Errorf("parley doctor has no check of Claude Code's letters:\n%s", out)
	}

	// held waits for the copy to read held, and returns it.
	held := func(t *testing.T, id string) api.RecipientDelivery {
		t.Helper()
		var c api.RecipientDelivery
		start := time.Now()
		waitFor(t, 20*time.Second, "the copy held", func() (bool, string) {
			c = e.copyStatus(t, repo, "boss", id, "held-cc")
			return c.State == "held", fmt.Sprintf("%+v\n%s", c, cc.Screen())
		})
		t.Logf("held %s after the send", time.Since(start).Round(time.Millisecond))
		if c.Door != "held" || c.Since == "" || !strings.Contains(c.Note, "held for the recipient user's approval") ||
			!strings.Contains(c.Note, `"crossSessionInbound":"accept"`) || c.WakePath != "door:claude" || c.SeenAt != "" {
			t.Errorf("the held copy: got %+v, want held since a time, the session's words and how to let letters in", c)
		}
		waitFor(t, 20*time.Second, "the held letter's dialog", func() (bool, string) {
			return cc.HeldDialog(), cc.Visible()
		})
		return c
	}

	t.Run("held, then approved: seen", func(t *testing.T) {
		id := e.sendIn(t, repo, "held-cc", "MAIL-HOLD-1 approve me", "--agent", "boss")
		sent[id] = "MAIL-HOLD-1 approve me"
		held(t, id)
		if m.find("MAIL-HOLD-1") != "" {
			t.Fatalf("the model got a letter the session holds")
		}
		// The session held it because the letter asserts no permission
		// mode (and never will): its own words.
		if b, _ := os.ReadFile(debug); !strings.Contains(string(b), "cause=no-mode-asserted") {
			t.Errorf("Claude Code's log does not say it held the letter for asserting no mode")
		}
		cc.ApproveHeld(20 * time.Second) // "Deliver this message to Claude"
		m.wait(t, 60*time.Second, cc.Screen, door.LetterMarker, "MAIL-HOLD-1 approve me")
		waitFor(t, 30*time.Second, "the copy seen and read", func() (bool, string) {
			c := e.copyStatus(t, repo, "boss", id, "held-cc")
			return c.SeenAt != "" && c.State == "read", fmt.Sprintf("%+v", c)
		})
	})

	t.Run("held, then denied: declined, never seen, the sender told", func(t *testing.T) {
		// The first letter's turn is over, its Stop hook run: nothing but a
		// letter can tell the session of the next message.
		waitFor(t, 30*time.Second, "the session idle", func() (bool, string) {
			st := cc.Session()
			return st.Status == "idle", st.Status + "\n" + cc.Screen()
		})
		id := e.sendIn(t, repo, "held-cc", "MAIL-HOLD-2 deny me", "--agent", "boss")
		sent[id] = "MAIL-HOLD-2 deny me"
		held(t, id)
		cc.DenyHeld() // "Deny — drop it and tell the sender it was declined"
		var c api.RecipientDelivery
		waitFor(t, 20*time.Second, "the copy declined", func() (bool, string) {
			c = e.copyStatus(t, repo, "boss", id, "held-cc")
			return c.State == "declined", fmt.Sprintf("%+v", c)
		})
		if c.SeenAt != "" || !strings.Contains(c.BounceReason, "declined") {
			t.Errorf("the declined copy: got %+v, want never seen, and why", c)
		}
		var inbox api.CheckResult
		waitFor(t, 10*time.Second, "boss told", func() (bool, string) {
			out, _, _ := e.runIn(repo, "inbox", "--agent", "boss", "--json")
			json.Unmarshal([]byte(out), &inbox)
			return strings.Contains(out, "Declined: your message "+id), out
		})
		out, errs, code := e.runIn(repo, "bounced", "--agent", "boss", "--json")
		var dead api.BouncedResult
		if code != 0 || json.Unmarshal([]byte(out), &dead) != nil || len(dead.Bounced) != 1 || dead.Bounced[0].MessageID != id || dead.Bounced[0].State != "declined" {
			t.Errorf("parley bounced: exit %d %s\n%s", code, errs, out)
		}
		// Sent again: a new letter, which this session holds again.
		if out, errs, code := e.runIn(repo, "redeliver", id, "--agent", "boss"); code != 0 || !strings.Contains(out, "redelivered "+id+" to held-cc") {
			t.Fatalf("parley redeliver: exit %d\n%s%s", code, out, errs)
		}
		held(t, id)
		if m.find("MAIL-HOLD-2") != "" {
			t.Errorf("the model got a letter the session held or its person declined")
		}
	})
}

// TestDoorClaudeBypassAccept: a bypassPermissions session whose user's
// settings say "crossSessionInbound": "accept" (what parley doctor and the
// hooks advise) takes Parley's letters: never held, seen, read. Its
// SessionStart hook says nothing, and doctor finds nothing to change.
func TestDoorClaudeBypassAccept(t *testing.T) {
	e := newEnv(t)
	repo := initRepo(t, e)
	claudeHome := filepath.Join(e.home, "claude")
	e.extra = append(e.extra, "CLAUDE_CONFIG_DIR="+filepath.Join(claudeHome, ".claude-config"))
	if out, errs, code := e.runIn(repo, "init", "claude", "--agent", "open-cc", "--yes"); code != 0 {
		t.Fatalf("init claude: exit %d\n%s%s", code, out, errs)
	}
	writeFile(t, filepath.Join(repo, ".claude", "settings.local.json"), `{"enabledMcpjsonServers":["parley"]}`)
	var m model
	s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		tail := r.Tail()
		m.add(tail)
		switch {
		case strings.Contains(tail, door.LetterMarker):
			return []standin.Block{standin.ToolUse("toolu_check", "mcp__parley__check_messages", nil)}
		case strings.Contains(tail, "MAIL-"):
			return []standin.Block{standin.Text("READ THE MAIL")}
		}
		return nil
	})
	e.Must("daemon", "start") // apart from the session, as a team's (TestDoorClaudeBypass has the session start it)
	tm := tmuxcli.NewServer(t)
	cc := tm.StartClaude("open", s, tmuxcli.ClaudeOptions{Dir: repo, Home: claudeHome, PermissionMode: "bypassPermissions",
		UserSettings: map[string]any{"crossSessionInbound": "accept"}, Env: []string{"PARLEY_HOME=" + e.home}})
	e.waitDoor(t, repo, "open-cc", "claude", cc.Screen)
	if out, _, _ := e.runIn(repo, "doctor"); !strings.Contains(out, `"crossSessionInbound": "accept": sessions take Parley's letters`) {
		t.Errorf("parley doctor, with the user's settings accepting letters:\n%s", out)
	}
	id := e.sendIn(t, repo, "open-cc", "MAIL-OPEN take me", "--agent", "boss")
	defer e.noFalseSeen(t, repo, "boss", "open-cc", &m, sentLog{id: "MAIL-OPEN take me"})
	var states []string
	waitFor(t, 60*time.Second, "the copy seen and read", func() (bool, string) {
		c := e.copyStatus(t, repo, "boss", id, "open-cc")
		if len(states) == 0 || states[len(states)-1] != c.State {
			states = append(states, c.State)
		}
		return c.SeenAt != "" && c.State == "read", fmt.Sprintf("%v\n%s", states, cc.Screen())
	})
	if slices.Contains(states, "held") || m.find(door.LetterMarker, "MAIL-OPEN take me") == "" {
		t.Errorf("the copy went %v; the model got the letter: %v", states, m.find(door.LetterMarker, "MAIL-OPEN take me") != "")
	}
	if strings.Contains(cc.Screen(), "Parley: sessions here run in bypassPermissions") {
		t.Errorf("the hook warned a session that takes letters")
	}
}

// TestDoorCodex: an interactive Codex session that `parley init codex` set
// up registers its thread as the door at its first Parley tool call; mail
// for its agent then starts a turn through the thread's queue.
func TestDoorCodex(t *testing.T) {
	e := newEnv(t)
	repo := initRepo(t, e)
	codexHome := e.withCodex(t)
	if out, errs, code := e.runIn(repo, "init", "codex", "--agent", "cx", "--yes"); code != 0 || !strings.Contains(out, "Codex now trusts Parley's SessionStart hook") {
		t.Fatalf("init codex: exit %d, want 0 and the SessionStart hook trusted\n%s%s", code, out, errs)
	}
	var m model
	var mu sync.Mutex
	n := 0
	call := func(tool string) []standin.Item {
		mu.Lock()
		n++
		id := fmt.Sprintf("call_%s_%d", tool, n)
		mu.Unlock()
		return []standin.Item{standin.FunctionCall(id, "mcp__parley", tool, map[string]any{})}
	}
	s := standin.OpenAI(t, func(r *standin.ResponsesRequest) []standin.Item {
		tail := r.Tail()
		m.add(tail)
		switch {
		case strings.Contains(tail, "FIRST-TURN") && !strings.Contains(tail, `"agent"`):
			return call("whoami")
		case strings.Contains(tail, door.LetterMarker):
			return call("check_messages")
		case strings.Contains(tail, "MAIL-"):
			return []standin.Item{standin.Message("READ THE MAIL")}
		}
		return nil
	})
	tm := tmuxcli.NewServer(t)
	cx := tm.StartCodex("cx", s, tmuxcli.CodexOptions{Dir: repo, Home: codexHome, Env: []string{"PARLEY_HOME=" + e.home}})
	cx.Type("FIRST-TURN hello")
	d := e.waitDoor(t, repo, "cx", "codex", cx.Screen)
	if d.Address != codexHome || d.Session != cx.Thread() {
		t.Errorf("door: got %+v, want CODEX_HOME %s and thread %s", d, codexHome, cx.Thread())
	}
	cx.WaitScreen(30*time.Second, "Worked for")
	id := e.sendIn(t, repo, "cx", "MAIL-CODEX please look", "--agent", "boss")
	defer e.noFalseSeen(t, repo, "boss", "cx", &m, sentLog{id: "MAIL-CODEX please look"})
	m.wait(t, 60*time.Second, cx.Screen, door.LetterMarker, "MAIL-CODEX please look")
	m.wait(t, 60*time.Second, cx.Screen, "MAIL-CODEX please look", "boss") // check_messages' result
	waitFor(t, 30*time.Second, "the copy read, seen, through the door", func() (bool, string) {
		c := e.copyStatus(t, repo, "boss", id, "cx")
		return c.State == "read" && c.WakePath == "door:codex" && c.SeenAt != "", fmt.Sprintf("%+v", c)
	})
}

// TestBounceAfterTTL: a message to an agent with no reader and no door
// bounces back to its sender once its time to live ends, with the reason:
// a notice in the sender's inbox and a dead letter.
func TestBounceAfterTTL(t *testing.T) {
	e := newEnv(t)
	id := e.sendIn(t, e.home, "ghost", "anyone there?", "--agent", "alice", "--workspace", "w", "--ttl", "1s")
	var dead api.BouncedResult
	waitFor(t, 20*time.Second, "the message bounced", func() (bool, string) {
		out, _, _ := e.runIn(e.home, "bounced", "--agent", "alice", "--workspace", "w", "--json")
		json.Unmarshal([]byte(out), &dead)
		return len(dead.Bounced) == 1, out
	})
	b := dead.Bounced[0]
	if b.MessageID != id || b.Recipient != "ghost" || !strings.Contains(b.Reason, "no reader and no door") {
		t.Errorf("dead letter: got %+v", b)
	}
	out, errs, code := e.runIn(e.home, "inbox", "--agent", "alice", "--workspace", "w", "--json")
	if code != 0 || !strings.Contains(out, "Bounced: your message "+id) || !strings.Contains(out, "no reader and no door") {
		t.Errorf("alice's inbox: exit %d %s\n%s", code, errs, out)
	}
	c := e.copyStatus(t, e.home, "alice", id, "ghost", "--workspace", "w")
	if c.State != "bounced" || c.BounceReason == "" || c.BouncedAt == "" {
		t.Errorf("delivery: got %+v, want bounced with a reason", c)
	}
}

func waitFileE2E(t *testing.T, path string) {
	t.Helper()
	waitFor(t, 30*time.Second, path, func() (bool, string) {
		_, err := os.Stat(path)
		return err == nil, ""
	})
}

// TestDaemonKeepsNoSessionDoor: a daemon started from inside a client
// session (its parley mcp serve, a hook) keeps none of that session's door
// variables, which would leak into every managed agent it runs.
func TestDaemonKeepsNoSessionDoor(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc here")
	}
	e := newEnv(t, "CLAUDE_CODE_MESSAGING_SOCKET=/tmp/cc-socks/1.sock", "CLAUDE_CODE_MESSAGING_TOKEN=secret", "CODEX_THREAD_ID=t1")
	e.Must("daemon", "start")
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", e.daemonPID()))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		k, _, _ := strings.Cut(kv, "=")
		for _, v := range door.SessionVars {
			if k == v {
				t.Errorf("the daemon inherited %s", kv)
			}
		}
	}
	if !strings.Contains(string(b), "PARLEY_HOME=") {
		t.Errorf("the daemon's environment has no PARLEY_HOME: %q", b)
	}
}
