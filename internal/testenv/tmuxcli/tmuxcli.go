// Package tmuxcli runs the real Claude Code and Codex CLIs interactively, as
// a person does, in panes of a private tmux server, with only the model
// replaced by a stand-in (internal/testenv/standin). A session starts idle
// at its prompt; tests type into it, read its screen, and find the doors it
// opens (Claude Code's inbox socket, the Codex thread and its CODEX_HOME).
//
// Starting one takes seconds (Codex also copies its app-server into
// CODEX_HOME the first time), so tests share sessions across subtests. Only
// tests (and the attention benchmark) import it.
package tmuxcli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/testenv"
	"github.com/parley-dev/parley/internal/testenv/standin"
)

// Server is a private tmux server (its own socket, never the user's).
type Server struct {
	t    testing.TB
	dir  string
	sock string
}

// NeedTmux fails under CI and skips elsewhere when tmux is missing.
func NeedTmux(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is not installed (run scripts/test-deps)")
		}
		t.Skip("tmux is not installed; run scripts/test-deps")
	}
}

// NewServer starts nothing yet: tmux starts its server with the first
// session. The server and what runs in it are killed when the test ends.
func NewServer(t testing.TB) *Server {
	t.Helper()
	NeedTmux(t)
	dir, err := os.MkdirTemp("/tmp", "tc")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, dir: dir, sock: filepath.Join(dir, "tmux.sock")}
	t.Cleanup(func() {
		exec.Command("tmux", "-S", s.sock, "kill-server").Run()
		os.RemoveAll(dir)
	})
	return s
}

// Dir is a short private directory of the server's, for sockets.
func (s *Server) Dir() string { return s.dir }

func (s *Server) run(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-S", s.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimRight(string(out), "\n"), nil
}

// Pane is one program running in a pane.
type Pane struct {
	s    *Server
	name string
	// PID is the program's process id (the pane's first process, which
	// execs the program).
	PID int
}

// Start runs argv in dir, in a new session named name, with exactly env as
// its environment (plus TERM).
func (s *Server) Start(name, dir string, env []string, argv ...string) *Pane {
	return s.StartIn(name, "", dir, env, argv...)
}

// StartIn is Start in a window named window; with a window name, the
// program also sees that it runs inside tmux ($TMUX, $TMUX_PANE), as a
// program a person starts in a tmux window does.
func (s *Server) StartIn(name, window, dir string, env []string, argv ...string) *Pane {
	s.t.Helper()
	args := []string{"new-session", "-d", "-s", name, "-x", "160", "-y", "50", "-c", dir}
	if window != "" {
		// The shell passes on tmux's own variables; env -i drops the rest.
		args = append(args, "-n", window, "sh", "-c", `exec env -i TERM=xterm-256color TMUX="$TMUX" TMUX_PANE="$TMUX_PANE" "$@"`, "sh")
	} else {
		args = append(args, "env", "-i", "TERM=xterm-256color")
	}
	args = append(args, env...)
	args = append(args, argv...)
	if _, err := s.run(args...); err != nil {
		s.t.Fatal(err)
	}
	out, err := s.run("display-message", "-p", "-t", name, "#{pane_pid}")
	if err != nil {
		s.t.Fatal(err)
	}
	pid, _ := strconv.Atoi(out)
	return &Pane{s: s, name: name, PID: pid}
}

// Screen is what the pane shows now ("" once it is gone).
func (p *Pane) Screen() string {
	out, _ := p.s.run("capture-pane", "-p", "-J", "-S", "-200", "-t", p.name)
	return out
}

// Visible is what the pane shows now, without its scrollback.
func (p *Pane) Visible() string {
	out, _ := p.s.run("capture-pane", "-p", "-J", "-t", p.name)
	return out
}

// WaitScreen waits until the screen contains sub, and fails the test with
// the screen after within.
func (p *Pane) WaitScreen(within time.Duration, sub string) {
	p.s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		scr := p.Screen()
		if strings.Contains(scr, sub) {
			return
		}
		if time.Now().After(deadline) {
			p.s.t.Fatalf("%s: no %q on the screen after %s:\n%s", p.name, sub, within, scr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitScreenAny waits until the screen contains one of subs, and fails
// the test with the screen after within.
func (p *Pane) WaitScreenAny(within time.Duration, subs ...string) {
	p.s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		scr := p.Screen()
		for _, sub := range subs {
			if strings.Contains(scr, sub) {
				return
			}
		}
		if time.Now().After(deadline) {
			p.s.t.Fatalf("%s: none of %q on the screen after %s:\n%s", p.name, subs, within, scr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Type types text and then Enter, apart, as a person does (a paste with a
// newline is not a submission).
func (p *Pane) Type(text string) {
	p.s.t.Helper()
	if _, err := p.s.run("send-keys", "-t", p.name, "-l", text); err != nil {
		p.s.t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the TUIs debounce a paste
	if _, err := p.s.run("send-keys", "-t", p.name, "Enter"); err != nil {
		p.s.t.Fatal(err)
	}
}

// Keys presses keys by tmux's names (Down, Enter, Escape...), apart.
func (p *Pane) Keys(keys ...string) {
	p.s.t.Helper()
	for _, k := range keys {
		if _, err := p.s.run("send-keys", "-t", p.name, k); err != nil {
			p.s.t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // a TUI reads a burst of keys as a paste
	}
}

// Kill ends the pane's session.
func (p *Pane) Kill() { p.s.run("kill-session", "-t", p.name) }

// stop kills the pane's session and waits (a while) for its program to
// exit, so that it writes no more into directories about to be removed.
func (p *Pane) stop() {
	p.Kill()
	if !waitExit(p.PID, 10*time.Second) {
		killGroup(p.PID)
		waitExit(p.PID, 5*time.Second)
	}
}

// WaitExit waits up to within for the program to exit (after Kill), and
// reports whether it did.
func (p *Pane) WaitExit(within time.Duration) bool { return waitExit(p.PID, within) }

// Alive reports whether the program still runs.
func (p *Pane) Alive() bool {
	_, err := p.s.run("has-session", "-t", p.name)
	return err == nil
}

// Claude is an interactive Claude Code session.
type Claude struct {
	*Pane
	Home      string // HOME of the session
	ConfigDir string // CLAUDE_CONFIG_DIR
}

// ClaudeOptions configure StartClaude.
type ClaudeOptions struct {
	Dir  string   // the project directory (required); trusted
	Env  []string // more environment (PATH is passed on)
	Args []string // more arguments, e.g. --mcp-config
	// Home is HOME and holds CLAUDE_CONFIG_DIR; default a temporary dir.
	Home string
	// Window, if set, names the tmux window the session runs in, and the
	// session sees tmux's variables (StartIn).
	Window string
	// PermissionMode is the session's --permission-mode: "default" unless
	// set. "bypassPermissions" is the mode teams of autonomous agents run
	// in: the session starts with its warning accepted (and, as root,
	// IS_SANDBOX=1, without which Claude Code refuses the mode).
	PermissionMode string
	// Settings, if set, is passed as --settings (a JSON object).
	Settings string
	// UserSettings are written to the user's settings.json
	// ($CLAUDE_CONFIG_DIR/settings.json).
	UserSettings map[string]any
}

// StartClaude starts Claude Code (from test/npm) at its prompt, pointed at
// the stand-in s: onboarding done, the API key and dir trusted, permission
// mode default (2.1.332 starts in auto mode, whose check runs on
// Anthropic's servers and fails against a stand-in). It returns once the
// prompt shows.
func (s *Server) StartClaude(name string, model *standin.Server, o ClaudeOptions) *Claude {
	s.t.Helper()
	bin := standin.CLI(s.t, "claude")
	home := o.Home
	if home == "" {
		home = s.t.TempDir()
	}
	env := append(standin.ClaudeEnv(model, home), "PATH="+os.Getenv("PATH"),
		// Sockets (cc-socks) in a short directory of the test's own.
		"TMPDIR="+s.dir)
	env = append(env, o.Env...)
	c := &Claude{Home: home, ConfigDir: filepath.Join(home, ".claude-config")}
	seed := map[string]any{"hasCompletedOnboarding": true, "theme": "dark",
		"customApiKeyResponses": map[string]any{"approved": []string{"dummy-key-for-tests"}, "rejected": []string{}},
		"projects":              map[string]any{o.Dir: map[string]any{"hasTrustDialogAccepted": true, "allowedTools": []string{}}}}
	if err := os.MkdirAll(c.ConfigDir, 0o700); err != nil {
		s.t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(c.ConfigDir, ".claude.json")); err != nil {
		b, _ := json.Marshal(seed)
		if err := os.WriteFile(filepath.Join(c.ConfigDir, ".claude.json"), b, 0o600); err != nil {
			s.t.Fatal(err)
		}
	}
	mode := o.PermissionMode
	if mode == "" {
		mode = "default"
	}
	user := map[string]any{}
	for k, v := range o.UserSettings {
		user[k] = v
	}
	if mode == "bypassPermissions" {
		// The warning a person accepts once, in the user's settings.
		user["skipDangerousModePermissionPrompt"] = true
		if os.Geteuid() == 0 {
			env = append(env, "IS_SANDBOX=1")
		}
	}
	if len(user) > 0 {
		b, _ := json.Marshal(user)
		if err := os.WriteFile(filepath.Join(c.ConfigDir, "settings.json"), b, 0o600); err != nil {
			s.t.Fatal(err)
		}
	}
	argv := []string{bin, "--permission-mode", mode}
	if o.Settings != "" {
		argv = append(argv, "--settings", o.Settings)
	}
	argv = append(argv, o.Args...)
	c.Pane = s.StartIn(name, o.Window, o.Dir, env, argv...)
	// Before its directories go (cleanups run last first).
	s.t.Cleanup(c.stop)
	// The prompt's footer: "? for shortcuts", or the mode and how to
	// cycle it ("⏵⏵ bypass permissions on (shift+tab to cycle)").
	c.WaitScreenAny(60*time.Second, "for shortcuts", "shift+tab to cycle")
	return c
}

// ClaudeSession is what a running Claude Code session records of itself in
// $CLAUDE_CONFIG_DIR/sessions/<pid>.json.
type ClaudeSession struct {
	PID       int    `json:"pid"`
	SessionID string `json:"sessionId"`
	Socket    string `json:"messagingSocketPath"`
	Status    string `json:"status"` // busy or idle
}

// Session reads the session's record (its inbox socket, its id, busy or
// idle), waiting for it to be written.
func (c *Claude) Session() ClaudeSession {
	c.s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ms, _ := filepath.Glob(filepath.Join(c.ConfigDir, "sessions", "*.json"))
		for _, m := range ms {
			var cs ClaudeSession
			if b, err := os.ReadFile(m); err == nil && json.Unmarshal(b, &cs) == nil && cs.Socket != "" && c.Alive() {
				return cs
			}
		}
		if time.Now().After(deadline) {
			c.s.t.Fatalf("claude wrote no session record in %s:\n%s", c.ConfigDir, c.Screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Codex is an interactive Codex session.
type Codex struct {
	*Pane
	Home string // CODEX_HOME
}

// CodexOptions configure StartCodex.
type CodexOptions struct {
	Dir string   // the project directory (required); trusted
	Env []string // more environment (PATH is passed on)
	// Home is CODEX_HOME; default a new temporary dir. Its config.toml
	// gets the stand-in's provider unless it has a model_provider.
	Home string
	// Config is more config.toml text, appended.
	Config string
}

// StartCodex starts Codex (from test/npm) at its prompt, pointed at the
// stand-in s, approvals off and the project trusted. Its app-server daemon
// outlives it: it is stopped when the test ends.
func (s *Server) StartCodex(name string, model *standin.Server, o CodexOptions) *Codex {
	s.t.Helper()
	bin := standin.CLI(s.t, "codex")
	home := o.Home
	if home == "" {
		home = s.t.TempDir()
	}
	conf := filepath.Join(home, "config.toml")
	old, _ := os.ReadFile(conf)
	if !strings.Contains(string(old), "model_provider") {
		text := fmt.Sprintf(`model = "gpt-5.5"
model_provider = "standin"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.standin]
name = "standin"
base_url = %q
wire_api = "responses"

[projects.%q]
trust_level = "trusted"

[tui]
screen_reader_detection_done = true

[tui.model_availability_nux]
"gpt-6.1-sol" = 1

[notice.model_migrations]
"gpt-5.5" = "gpt-6-sol"
`, model.URL+"/v1", o.Dir)
		// Keys before tables: keys after a table header would land in it,
		// ours and those at the top of what is there (parley init's).
		head, tables := topLevel(string(old))
		text = strings.Replace(text, "\n[model_providers.standin]", "\n"+o.Config+"\n"+head+"\n[model_providers.standin]", 1)
		if err := os.MkdirAll(home, 0o700); err != nil {
			s.t.Fatal(err)
		}
		if err := os.WriteFile(conf, []byte(text+tables), 0o600); err != nil {
			s.t.Fatal(err)
		}
	}
	env := append([]string{"HOME=" + home, "CODEX_HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + s.dir, testenv.GoRace()}, o.Env...)
	c := &Codex{Home: home}
	c.Pane = s.Start(name, o.Dir, env, bin)
	s.t.Cleanup(func() {
		c.stop()
		stopCodexDaemon(home)
	})
	c.WaitScreen(90*time.Second, "for shortcuts")
	return c
}

// topLevel splits TOML text at its first table header: its top-level keys,
// and the rest.
func topLevel(text string) (head, tables string) {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "[") {
			return strings.Join(lines[:i], ""), strings.Join(lines[i:], "")
		}
	}
	return text, ""
}

// stopCodexDaemon stops the app-server daemon (and its updater) that the
// TUI started in home, by the pids it recorded.
func stopCodexDaemon(home string) {
	for _, f := range []string{"daemon.pid", "daemon-updater.pid"} {
		b, err := os.ReadFile(filepath.Join(home, "app-server-daemon", f))
		if err != nil {
			continue
		}
		var rec struct {
			PID int `json:"pid"`
		}
		if json.Unmarshal(b, &rec) == nil && rec.PID > 1 {
			if p, err := os.FindProcess(rec.PID); err == nil && p.Kill() == nil {
				waitExit(rec.PID, 10*time.Second)
			}
		}
	}
}

// Thread is the id of the newest thread of the session's CODEX_HOME,
// waiting for one (a thread is written with its first turn).
func (c *Codex) Thread() string {
	c.s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var newest string
		var at time.Time
		filepath.Walk(filepath.Join(c.Home, "sessions"), func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() && strings.HasPrefix(fi.Name(), "rollout-") && strings.HasSuffix(fi.Name(), ".jsonl") && fi.ModTime().After(at) {
				newest, at = fi.Name(), fi.ModTime()
			}
			return nil
		})
		if newest != "" {
			base := strings.TrimSuffix(newest, ".jsonl")
			if len(base) >= 36 {
				return base[len(base)-36:]
			}
		}
		if time.Now().After(deadline) {
			c.s.t.Fatalf("codex wrote no thread in %s:\n%s", c.Home, c.Screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The choices of a held letter's dialog: Deny (where the pointer starts)
// and Deliver, which lets the letter in.
const (
	heldDeliver = "Deliver this message to Claude"
	heldDeny    = "Deny — drop it and tell the sender it was declined"
)

// HeldDialog reports whether the screen shows a held letter's dialog.
func (c *Claude) HeldDialog() bool { return strings.Contains(c.Visible(), heldDeliver) }

// ApproveHeld chooses "Deliver this message to Claude" in the dialog of a
// letter the session holds, once the dialog shows, and returns when it
// pressed the Enter that took it. It presses Down only while the pointer
// (❯) is on Deny, and Enter only once it is on Deliver: a key sent as the
// dialog opens is lost, a Down too many leaves Deliver, and Down and Enter
// sent together can land as an Enter alone, which picks Deny.
func (c *Claude) ApproveHeld(within time.Duration) time.Time {
	c.s.t.Helper()
	deadline := time.Now().Add(within)
	var pressed time.Time
	for {
		var deny, deliver bool
		for _, l := range strings.Split(c.Visible(), "\n") {
			switch {
			case strings.Contains(l, heldDeny):
				deny = strings.Contains(l, "❯")
			case strings.Contains(l, heldDeliver):
				deliver = strings.Contains(l, "❯")
			}
		}
		switch {
		case deliver:
			return c.answerHeld("Enter")
		case time.Now().After(deadline):
			c.s.t.Fatalf("%s: the held letter's dialog never pointed at %q after %s:\n%s", c.name, heldDeliver, within, c.Visible())
		case deny && time.Since(pressed) > time.Second: // or the key was lost
			c.Keys("Down")
			pressed = time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// DenyHeld chooses "Deny" (where the pointer starts) in the dialog of a
// letter the session holds, which shows.
func (c *Claude) DenyHeld() { c.s.t.Helper(); c.answerHeld("Enter") }

// answerHeld presses key in the held letter's dialog until it closes (a
// TUI busy redrawing may miss a key), and returns when it pressed it last.
func (c *Claude) answerHeld(key string) time.Time {
	c.s.t.Helper()
	for try := 0; ; try++ {
		at := time.Now()
		c.Keys(key)
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) && c.HeldDialog() {
			time.Sleep(20 * time.Millisecond)
		}
		if !c.HeldDialog() {
			return at
		}
		if try == 3 {
			c.s.t.Fatalf("%s: the held letter's dialog did not take %s:\n%s", c.name, key, c.Visible())
		}
	}
}
