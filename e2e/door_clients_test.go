package e2e

// The doors of Qwen Code and opencode, with the real CLIs (test/npm)
// running interactively in tmux, set up by `parley init` alone, the model
// replaced by the chat-completions stand-in (answers in plain text: the
// test asks only that the session's turn carried the letter).

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/door"
	"github.com/parley-dev/parley/internal/testenv/standin"
	"github.com/parley-dev/parley/internal/testenv/tmuxcli"
)

// chatModel is a chat-completions stand-in that records each request's
// tail and answers a letter in words.
func chatModel(t *testing.T, m *model) *standin.Server {
	return standin.Chat(t, func(r *standin.ChatRequest) string {
		tail := r.Tail()
		m.add(tail)
		if strings.Contains(tail, door.LetterMarker) {
			return "I will read the mail."
		}
		return ""
	})
}

// TestDoorQwen: an idle Qwen Code session set up by `parley init qwen`
// (its MCP server, and the user's inbound setting accept) registers its
// inbox as its agent's door; a message for the agent starts a turn whose
// model request carries the letter, and the copy reads seen, through the
// door. Qwen Code's own receipt says delivered before that; seen comes
// only from the session's transcript of the turn.
func TestDoorQwen(t *testing.T) {
	standin.CLI(t, "qwen")
	e := newEnv(t)
	repo := initRepo(t, e)
	home := filepath.Join(e.home, "qwen")
	e.extra = append(e.extra, "QWEN_HOME="+filepath.Join(home, ".qwen"))
	out, errs, code := e.runIn(repo, "init", "qwen", "--agent", "qw", "--yes")
	if code != 0 || !strings.Contains(out, "Qwen Code sessions take them") {
		t.Fatalf("init qwen: exit %d, want 0 and the letters taken\n%s%s", code, out, errs)
	}
	var m model
	s := chatModel(t, &m)
	tm := tmuxcli.NewServer(t)
	q := tm.StartQwen("qw", s, tmuxcli.QwenOptions{Dir: repo, Home: home, Env: []string{"PARLEY_HOME=" + e.home}})
	d := e.waitDoor(t, repo, "qw", "qwen", q.Screen)
	if d.Address != q.Record() || !d.ByMCP {
		t.Errorf("door: got %+v, want the session's record %s, registered by parley mcp serve", d, q.Record())
	}
	id := e.sendIn(t, repo, "qw", "MAIL-QWEN please look", "--agent", "boss")
	letter := m.wait(t, 60*time.Second, q.Screen, door.LetterMarker, "MAIL-QWEN please look")
	if !strings.Contains(letter, "boss (agent") || !strings.Contains(letter, "check_messages") {
		t.Errorf("the letter the model got:\n%s", letter)
	}
	waitFor(t, 30*time.Second, "the copy seen through the door", func() (bool, string) {
		c := e.copyStatus(t, repo, "boss", id, "qw")
		return c.WakePath == "door:qwen" && c.SeenAt != "", fmt.Sprintf("%+v", c)
	})
}

// TestDoorQwenHeld: a Qwen Code session whose user settings leave the
// inbound policy unset holds Parley's letter for its person (a letter
// claims no review class), and says so: the copy reads held, with how to
// let letters in, and is never seen.
func TestDoorQwenHeld(t *testing.T) {
	standin.CLI(t, "qwen")
	e := newEnv(t)
	repo := initRepo(t, e)
	home := filepath.Join(e.home, "qwen")
	e.extra = append(e.extra, "QWEN_HOME="+filepath.Join(home, ".qwen"))
	if out, errs, code := e.runIn(repo, "init", "qwen", "--agent", "qh", "--yes"); code != 0 {
		t.Fatalf("init qwen: exit %d\n%s%s", code, out, errs)
	}
	// The person's choice: the setting init wrote, taken out again.
	settings := filepath.Join(home, ".qwen", "settings.json")
	b, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, settings, strings.Replace(string(b), `"crossSessionInbound": "accept"`, `"crossSessionHeldExpiry": "5m"`, 1))
	if out, _, _ := e.runIn(repo, "doctor"); !strings.Contains(out, "holds Parley's letters") {
		t.Errorf("doctor does not say the session holds letters:\n%s", out)
	}
	var m model
	s := chatModel(t, &m)
	tm := tmuxcli.NewServer(t)
	q := tm.StartQwen("qh", s, tmuxcli.QwenOptions{Dir: repo, Home: home, Env: []string{"PARLEY_HOME=" + e.home}})
	e.waitDoor(t, repo, "qh", "qwen", q.Screen)
	id := e.sendIn(t, repo, "qh", "MAIL-HELD please look", "--agent", "boss")
	waitFor(t, 30*time.Second, "the copy held", func() (bool, string) {
		c := e.copyStatus(t, repo, "boss", id, "qh")
		return c.State == "held" && strings.Contains(c.Note, "crossSessionInbound"), fmt.Sprintf("%+v", c)
	})
	q.WaitScreen(10*time.Second, "/peers")
	if got := m.find("MAIL-HELD"); got != "" {
		t.Errorf("the model got a held letter:\n%s", got)
	}
	if c := e.copyStatus(t, repo, "boss", id, "qh"); c.SeenAt != "" {
		t.Errorf("a held letter is seen: %+v", c)
	}
}

// TestDoorOpencode: an idle opencode TUI set up by `parley init opencode`
// registers its local server as its agent's door (parley mcp serve finds
// it from OPENCODE_PID); a message for the agent starts a turn (in a new
// session, the TUI having none yet) whose model request carries the
// letter, and the copy reads seen once the model answered it.
func TestDoorOpencode(t *testing.T) {
	standin.CLI(t, "opencode")
	e := newEnv(t)
	repo := initRepo(t, e)
	out, errs, code := e.runIn(repo, "init", "opencode", "--agent", "oc", "--yes")
	if code != 0 || !strings.Contains(out, "opencode.json") {
		t.Fatalf("init opencode: exit %d\n%s%s", code, out, errs)
	}
	var m model
	s := chatModel(t, &m)
	tm := tmuxcli.NewServer(t)
	oc := tm.StartOpencode("oc", s, tmuxcli.OpencodeOptions{Dir: repo, Home: filepath.Join(e.home, "opencode"), Env: []string{"PARLEY_HOME=" + e.home}})
	d := e.waitDoor(t, repo, "oc", "opencode", oc.Screen)
	if !strings.HasPrefix(d.Address, "http://127.0.0.1:") || d.Session != repo || !d.ByMCP {
		t.Errorf("door: got %+v, want the TUI's loopback server for %s, registered by parley mcp serve", d, repo)
	}
	id := e.sendIn(t, repo, "oc", "MAIL-OPENCODE please look", "--agent", "boss")
	letter := m.wait(t, 90*time.Second, oc.Screen, door.LetterMarker, "MAIL-OPENCODE please look")
	if !strings.Contains(letter, "check_messages") {
		t.Errorf("the letter the model got:\n%s", letter)
	}
	waitFor(t, 30*time.Second, "the copy seen through the door", func() (bool, string) {
		c := e.copyStatus(t, repo, "boss", id, "oc")
		return c.WakePath == "door:opencode" && c.SeenAt != "", fmt.Sprintf("%+v", c)
	})
}

// TestInitOpencodeQwen: parley init opencode and init qwen merge with what
// the files have, write the parley server whole, change nothing when run
// again, and leave a person's own inbound choice (refuse) as it is,
// saying what it does to Parley's letters.
func TestInitOpencodeQwen(t *testing.T) {
	e := newEnv(t)
	repo := initRepo(t, e)
	qhome := filepath.Join(e.home, "qwen-home")
	e.extra = append(e.extra, "QWEN_HOME="+qhome)
	writeFile(t, filepath.Join(repo, "opencode.json"), `{"theme":"dark","mcp":{"other":{"type":"local","command":["x"]}}}`)
	if out, errs, code := e.runIn(repo, "init", "opencode", "--agent", "oc", "--yes"); code != 0 || !strings.Contains(out, "opencode --port 0") {
		t.Fatalf("init opencode: exit %d, want 0 and how to start opencode\n%s%s", code, out, errs)
	}
	m := readJSON(t, filepath.Join(repo, "opencode.json"))
	servers := m["mcp"].(map[string]any)
	p := servers["parley"].(map[string]any)
	cmd, _ := p["command"].([]any)
	if m["theme"] != "dark" || servers["other"] == nil || p["type"] != "local" || len(cmd) != 5 || cmd[0] != bin || cmd[4] != "oc" {
		t.Errorf("opencode.json: got %v, want theme and the other server kept, and parley's local server", m)
	}
	writeFile(t, filepath.Join(qhome, "settings.json"), `{"agents":{"crossSessionInbound":"refuse"},"theme":"x"}`)
	out, errs, code := e.runIn(repo, "init", "qwen", "--agent", "qw", "--yes")
	if code != 0 || !strings.Contains(out, "Qwen Code refuses Parley's letters") {
		t.Fatalf("init qwen: exit %d, want 0 and the refusal said\n%s%s", code, out, errs)
	}
	if u := readJSON(t, filepath.Join(qhome, "settings.json")); u["agents"].(map[string]any)["crossSessionInbound"] != "refuse" || u["theme"] != "x" {
		t.Errorf("init qwen changed the person's own choice: %v", u)
	}
	q := readJSON(t, filepath.Join(repo, ".qwen", "settings.json"))
	if q["mcpServers"].(map[string]any)["parley"].(map[string]any)["command"] != bin {
		t.Errorf(".qwen/settings.json: %v", q)
	}
	for _, c := range []string{"opencode", "qwen"} {
		if out, _, code := e.runIn(repo, "init", c, "--agent", map[string]string{"opencode": "oc", "qwen": "qw"}[c], "--yes"); code != 0 || !strings.Contains(out, "nothing to change") {
			t.Errorf("init %s again: exit %d, want nothing to change\n%s", c, code, out)
		}
	}
}
