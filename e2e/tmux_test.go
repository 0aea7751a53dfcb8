package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/api"
)

// needTmux fails under CI and skips elsewhere when tmux is missing.
func needTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is not installed (run scripts/test-deps)")
		}
		t.Skip("tmux is not installed; run scripts/test-deps")
	}
}

// tmuxServer is a private tmux server (its own socket, never the user's).
type tmuxServer struct {
	t    *testing.T
	sock string
}

func newTmux(t *testing.T) *tmuxServer {
	t.Helper()
	needTmux(t)
	dir, err := os.MkdirTemp("/tmp", "pt")
	if err != nil {
		t.Fatal(err)
	}
	s := &tmuxServer{t: t, sock: filepath.Join(dir, "tmux.sock")}
	t.Cleanup(func() {
		exec.Command("tmux", "-S", s.sock, "kill-server").Run()
		os.RemoveAll(dir)
	})
	return s
}

func (s *tmuxServer) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// window starts a session with one window of that name and returns the
// environment a process in its pane would have.
func (s *tmuxServer) window(session, name string) []string {
	s.run("new-session", "-d", "-s", session, "-n", name, "sleep 600")
	pane := s.run("list-panes", "-t", session, "-F", "#{pane_id}")
	pid := s.run("display-message", "-p", "-t", pane, "#{pid}")
	return []string{"TMUX=" + s.sock + "," + pid + ",0", "TMUX_PANE=" + pane}
}

func TestTmuxIdentityAndExit(t *testing.T) {
	tm := newTmux(t)
	e := newEnv(t, tm.window("agents", "reviewer")...)

	c := e.Cmd("mcp", "serve", "--workspace", "w")
	stdin, _ := c.StdinPipe()
	stdout, _ := c.StdoutPipe()
	stderr := &syncBuffer{}
	c.Stderr = stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	defer func() {
		stdin.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			c.Process.Kill()
		}
	}()
	r := bufio.NewReader(stdout)
	send := func(line string) { io.WriteString(stdin, line+"\n") }
	recv := func() map[string]any {
		t.Helper()
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read stdout: %v (stderr %s)", err, stderr.String())
		}
		var m map[string]any
		json.Unmarshal([]byte(line), &m)
		return m
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	recv()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`)
	m := recv()
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if sc["agent"] != "reviewer" {
		t.Fatalf("whoami inside tmux window \"reviewer\": got %v, want agent reviewer", m)
	}
	// The agent registered under the window name.
	var agents struct {
		Agents []struct{ Name string } `json:"agents"`
	}
	e.MustJSON(&agents, "agents", "--workspace", "w")
	if len(agents.Agents) != 1 || agents.Agents[0].Name != "reviewer" {
		t.Errorf("agents: got %+v, want reviewer", agents.Agents)
	}

	// The tmux session goes away: mcp serve exits by itself, saying why.
	tm.run("kill-session", "-t", "agents")
	killed := time.Now()
	select {
	case err := <-done:
		done <- err
		t.Logf("mcp serve exited %v after its tmux session was killed", time.Since(killed).Round(time.Millisecond))
		if err == nil {
			t.Errorf("mcp serve exited 0 after its tmux session went away, want a failure status")
		}
		if !strings.Contains(stderr.String(), "tmux session") {
			t.Errorf("stderr: got %q, want a message about the tmux session", stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("mcp serve still runs 10 s after its tmux session went away; stderr: %s", stderr.String())
	}
}

func TestTmuxExplicitNameWins(t *testing.T) {
	tm := newTmux(t)
	e := newEnv(t, tm.window("s", "window-name")...)
	s := e.Session(nil, "--workspace", "w", "--agent", "chosen")
	var who struct {
		Agent string `json:"agent"`
	}
	mustCall(t, s, "whoami", nil, &who)
	if who.Agent != "chosen" {
		t.Errorf("whoami with --agent inside tmux: got %q, want chosen", who.Agent)
	}
}

// TestTmuxNudgeThroughDaemon: `mcp serve --nudge tmux` inside tmux tells the
// daemon its pane; a message for the idle agent types a notice into it.
func TestTmuxNudgeThroughDaemon(t *testing.T) {
	tm := newTmux(t)
	tm.run("new-session", "-d", "-s", "agent", "-n", "carol", "-x", "200", "-y", "20",
		`sh -c 'while IFS= read -r l; do echo "GOT:$l"; done'`)
	pane := tm.run("list-panes", "-t", "agent", "-F", "#{pane_id}")
	pid := tm.run("display-message", "-p", "-t", pane, "#{pid}")
	e := newEnv(t, "TMUX="+tm.sock+","+pid+",0", "TMUX_PANE="+pane)
	s := e.Session(nil, "--workspace", "w", "--nudge", "tmux")
	var who struct {
		Agent string `json:"agent"`
	}
	mustCall(t, s, "whoami", nil, &who)
	if who.Agent != "carol" {
		t.Fatalf("whoami: got %q, want carol (the window name)", who.Agent)
	}
	var sent api.SendResult
	e.MustJSON(&sent, "send", "carol", "wake up", "--agent", "dave", "--workspace", "w")
	e.Must("send", "carol", "really", "--agent", "dave", "--workspace", "w")
	var screen string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		screen = tm.run("capture-pane", "-p", "-t", pane)
		if strings.Contains(screen, "GOT:[parley] carol: 2 unread messages (latest from dave)") {
			break
		}
	}
	if !strings.Contains(screen, "GOT:[parley] carol: 2 unread messages (latest from dave)") {
		t.Fatalf("no nudge in carol's pane after a burst of two messages:\n%s", screen)
	}
	// The notice is how the mail reached carol: its wake path.
	waitUntil(t, "the tmux wake path recorded", func() bool {
		var st api.MessageStatusResult
		e.MustJSON(&st, "delivery", sent.MessageID, "--agent", "dave", "--workspace", "w")
		return len(st.Recipients) == 1 && st.Recipients[0].WakePath == "tmux"
	})
}
