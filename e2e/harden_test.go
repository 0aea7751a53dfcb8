package e2e

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nobody is another user's uid, for the cross-user cases.
const nobody = 65534

// needRoot skips a cross-user case unless the test may give files away.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("cross-user case: needs root to make files owned by uid %d (running as uid %d)", nobody, os.Geteuid())
	}
}

// TestSharedHomeRefused: a PARLEY_HOME that another user prepared, with
// daemon.log a link to the victim's ~/.bashrc, is refused before anything is
// written in it.
func TestSharedHomeRefused(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	victim := filepath.Join(t.TempDir(), "bashrc")
	os.WriteFile(victim, []byte("# precious\n"), 0o600)
	if err := os.Symlink(victim, filepath.Join(e.home, "daemon.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(e.home, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"daemon", "start"}, {"daemon", "run"}, {"agents", "--workspace", "w"}} {
		_, errOut, code := e.Run(args...)
		if code == 0 || !strings.Contains(errOut, "belongs to uid 65534") {
			t.Errorf("parley %v in someone else's PARLEY_HOME: exit %d %q, want a refusal naming the owner", args, code, errOut)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "# precious\n" {
		t.Errorf("the link's target: got %q, want it untouched", b)
	}
	ents, _ := os.ReadDir(e.home)
	if len(ents) != 1 {
		t.Errorf("files written in the refused directory: %v", ents)
	}

	// Our own directory with a planted log link: the daemon refuses the link.
	own := newEnv(t)
	os.Symlink(victim, filepath.Join(own.home, "daemon.log"))
	if _, errOut, code := own.Run("daemon", "start"); code == 0 || !strings.Contains(errOut, "symbolic link") {
		t.Errorf("daemon.log a link: exit %d %q, want a refusal", code, errOut)
	}
	if b, _ := os.ReadFile(victim); string(b) != "# precious\n" {
		t.Errorf("the link's target: got %q, want it untouched", b)
	}
}

// TestPlantedSocketRefused: a socket in a directory another user owns is not
// dialled, so a fake daemon captures nothing.
func TestPlantedSocketRefused(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	ln, err := net.Listen("unix", filepath.Join(e.home, "parley.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialled := make(chan struct{}, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dialled <- struct{}{}
			c.Close()
		}
	}()
	os.Chown(filepath.Join(e.home, "parley.sock"), nobody, nobody)
	os.Chown(e.home, nobody, nobody)
	_, errOut, code := e.Run("send", "--workspace", "w", "--agent", "alice", "bob", "the secret plan")
	if code == 0 || !strings.Contains(errOut, "belongs to uid 65534") {
		t.Errorf("send over a planted socket: exit %d %q, want a refusal", code, errOut)
	}
	select {
	case <-dialled:
		t.Error("the CLI connected to a socket it does not own")
	default:
	}

	// Our own directory, someone else's socket.
	os.Chown(e.home, 0, 0)
	_, errOut, code = e.Run("send", "--workspace", "w", "--agent", "alice", "bob", "the secret plan")
	if code == 0 || !strings.Contains(errOut, "parley.sock belongs to uid 65534") {
		t.Errorf("send over someone else's socket: exit %d %q, want a refusal", code, errOut)
	}
	select {
	case <-dialled:
		t.Error("the CLI connected to a socket it does not own")
	default:
	}
}

// TestForeignIdentityWorkspace: an identity file shipped in a repository that
// names another workspace does not silently join it; the user can allow it.
func TestForeignIdentityWorkspace(t *testing.T) {
	e := newEnv(t)
	repo := t.TempDir()
	os.Mkdir(filepath.Join(repo, ".git"), 0o755)
	ids := filepath.Join(repo, ".parley", "identities")
	os.MkdirAll(ids, 0o755)
	os.WriteFile(filepath.Join(ids, "bob.json"), []byte(`{"name":"bob","role":"dev","workspace":"their-team"}`), 0o644)
	run := func(extra []string, args ...string) (string, string, int) {
		c := osexec.Command(bin, args...)
		c.Env, c.Dir = append(e.environ(), extra...), repo
		var out, errb strings.Builder
		c.Stdout, c.Stderr = &out, &errb
		err := c.Run()
		if ee, ok := err.(*osexec.ExitError); ok {
			return out.String(), errb.String(), ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), 0
	}
	for _, args := range [][]string{{"mcp", "serve"}, {"whoami"}, {"agents"}} {
		_, errOut, code := run(nil, args...)
		if code == 0 || !strings.Contains(errOut, `names workspace "their-team"`) || !strings.Contains(errOut, "PARLEY_TRUST_IDENTITY_WORKSPACE=1") {
			t.Errorf("parley %v: exit %d %q, want a refusal that says how to allow it", args, code, errOut)
		}
	}
	e.Must("join", "--workspace", "their-team", "--name", "carol")
	out, errOut, code := run([]string{"PARLEY_TRUST_IDENTITY_WORKSPACE=1"}, "agents", "--json")
	var list struct {
		Agents []struct{ Name string } `json:"agents"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Agents) != 1 || list.Agents[0].Name != "carol" {
		t.Errorf("allowed: exit %d %q %q, want their-team's agents", code, out, errOut)
	}
}

// TestTerminalEscapesNeutralized: escape sequences in a message reach the
// terminal as visible text in every command that prints messages, and --json
// still carries the content exactly.
func TestTerminalEscapesNeutralized(t *testing.T) {
	e := newEnv(t)
	e.Must("daemon", "start")
	const evil = "\x1b]0;pwned\x07\x1b[2J\x1b[Hall good\rFAKE \u009b31m\u202eevil"
	watch := e.Cmd("watch", "--workspace", "w")
	stdout, _ := watch.StdoutPipe()
	stderr, _ := watch.StderrPipe()
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watch.Process.Kill(); watch.Wait() })
	if line, err := bufio.NewReader(stderr).ReadString('\n'); err != nil || !strings.HasPrefix(line, "watching") {
		t.Fatalf("watch: %q %v", line, err)
	}
	e.Must("send", "--workspace", "w", "--agent", "mallory", "alice", evil)
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatalf("watch ended: %v", sc.Err())
	}
	outputs := map[string]string{"watch": sc.Text()}
	for name, args := range map[string][]string{
		"inbox":   {"inbox", "--workspace", "w", "--agent", "alice", "--peek"},
		"history": {"history", "--workspace", "w", "--agent", "alice"},
		"wait":    {"wait", "--workspace", "w", "--agent", "alice", "--timeout", "5s"},
	} {
		outputs[name] = e.Must(args...)
	}
	for name, out := range outputs {
		if strings.ContainsAny(out, "\x1b\x07\r\u009b\u202e") {
			t.Errorf("%s printed raw control characters: %q", name, out)
		}
		if !strings.Contains(out, `\u001b]0;pwned\u0007`) {
			t.Errorf("%s: got %q, want the escape shown as text", name, out)
		}
	}
	var h struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	e.MustJSON(&h, "history", "--workspace", "w", "--agent", "alice")
	if len(h.Messages) != 1 || h.Messages[0].Content != evil {
		t.Errorf("history --json: got %+v, want the content exactly", h.Messages)
	}
}

// TestConfusableNameRefused: a homoglyph of an existing agent's name is
// refused at join, with the character that differs named.
func TestConfusableNameRefused(t *testing.T) {
	e := newEnv(t)
	e.Must("join", "--workspace", "w", "--name", "bob")
	_, errOut, code := e.Run("join", "--workspace", "w", "--name", "bоb")
	if code == 0 || !strings.Contains(errOut, `looks like the existing agent "bob"`) || !strings.Contains(errOut, "Cyrillic") {
		t.Errorf("join bоb: exit %d %q, want a refusal", code, errOut)
	}
	var list struct {
		Agents []struct{ Name string } `json:"agents"`
	}
	e.MustJSON(&list, "agents", "--workspace", "w")
	if len(list.Agents) != 1 {
		t.Errorf("agents: got %+v, want bob alone", list.Agents)
	}
}

// TestRetentionPrunesOnline: with retention set, messages every recipient
// has read are pruned once past it while the daemon runs; unread ones stay.
func TestRetentionPrunesOnline(t *testing.T) {
	e := newEnv(t)
	os.WriteFile(filepath.Join(e.home, "config.toml"), []byte("retention = \"2s\"\n"), 0o600)
	e.Must("daemon", "start")
	pid := e.daemonPID()
	e.Must("send", "--workspace", "w", "--agent", "alice", "bob", "read soon")
	e.Must("send", "--workspace", "w", "--agent", "alice", "carol", "never read")
	e.Must("inbox", "--workspace", "w", "--agent", "bob")
	type history struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var h history
		e.mustAPI("GET", "/messages", "w", "", nil, &h)
		if len(h.Messages) == 1 {
			if h.Messages[0].Content != "never read" {
				t.Fatalf("kept %q, want the unread message", h.Messages[0].Content)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("history after 20 s: got %d messages, want the read one pruned", len(h.Messages))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if e.daemonPID() != pid {
		t.Error("the daemon restarted; want pruning online")
	}
	if b, _ := os.ReadFile(filepath.Join(e.home, "daemon.log")); !strings.Contains(string(b), "purged read messages") {
		t.Errorf("daemon.log does not report the purge:\n%s", b)
	}
}
