package nudge_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/nudge"
	"github.com/parley-dev/parley/internal/store/sqlite"
	"github.com/parley-dev/parley/internal/tmux"
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

// pane starts a private tmux server (never the user's) with one pane that
// echoes each line it is sent as "GOT:line", and kills the server at the end.
func pane(t *testing.T) (tmux.Client, string) {
	t.Helper()
	needTmux(t)
	dir, err := os.MkdirTemp("/tmp", "pn")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "tmux.sock")
	tc := tmux.Client{Socket: sock}
	script := `while IFS= read -r l; do echo "GOT:$l"; done`
	if out, err := exec.Command("tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "200", "-y", "20", "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("start tmux: %v %s", err, out)
	}
	t.Cleanup(func() {
		exec.Command("tmux", "-S", sock, "kill-server").Run()
		os.RemoveAll(dir)
	})
	out, err := exec.Command("tmux", "-S", sock, "list-panes", "-t", "t", "-F", "#{pane_id}").Output()
	if err != nil {
		t.Fatal(err)
	}
	return tc, strings.TrimSpace(string(out))
}

func capture(t *testing.T, tc tmux.Client, p string) string {
	t.Helper()
	out, err := exec.Command("tmux", "-S", tc.Socket, "capture-pane", "-p", "-t", p).Output()
	if err != nil {
		t.Fatalf("capture-pane: %v", err)
	}
	return string(out)
}

// eventually polls cond for up to 5 s.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func TestNudge(t *testing.T) {
	tc, p := pane(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "p.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h := hub.New(db, nil)
	const ws = "w"
	for _, n := range []string{"alice", "bob", "quiet"} {
		if _, err := h.Join(ctx, hub.JoinRequest{Workspace: ws, Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	const debounce = 150 * time.Millisecond
	n := nudge.New(h, &nudge.Options{
		Debounce: debounce,
		Cooldown: time.Hour, // only a status change re-arms
		Locate: func(w, agent string) (nudge.Target, bool) {
			switch agent {
			case "alice":
				return nudge.Target{Socket: tc.Socket, Pane: p, Nudge: "tmux"}, true
			case "quiet": // has a pane but did not ask to be nudged
				return nudge.Target{Socket: tc.Socket, Pane: p}, true
			}
			return nudge.Target{}, false
		},
	})
	go n.Run(ctx)
	send := func(to, text string) {
		t.Helper()
		if _, err := h.Send(ctx, hub.SendRequest{Workspace: ws, From: "bob", To: to, Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	notices := func() int { return strings.Count(capture(t, tc, p), "GOT:[parley] alice:") }
	settle := func() { time.Sleep(4 * debounce) }

	// A burst of three messages to a ready agent: one notice, read back from the pane.
	send("alice", "one")
	send("alice", "two")
	send("alice", "three")
	if !eventually(func() bool { return notices() == 1 }) {
		t.Fatalf("after a burst: got %d notices, want 1; pane:\n%s", notices(), capture(t, tc, p))
	}
	settle()
	if got := notices(); got != 1 {
		t.Fatalf("got %d notices for one burst, want 1", got)
	}
	if want := nudge.Notice("alice", 3, "bob"); !strings.Contains(capture(t, tc, p), "GOT:"+want) {
		t.Errorf("pane lacks the notice %q:\n%s", want, capture(t, tc, p))
	}

	// Until alice changes her status, more mail does not nudge her again.
	send("alice", "four")
	settle()
	if got := notices(); got != 1 {
		t.Errorf("a second burst without a status change: got %d notices, want 1", got)
	}

	// At work: no notice.
	if err := h.SetStatus(ctx, ws, "alice", hub.StatusWork); err != nil {
		t.Fatal(err)
	}
	send("alice", "five")
	settle()
	if got := notices(); got != 1 {
		t.Errorf("agent at work: got %d notices, want 1", got)
	}

	// Ready, but the pane holds unsent input: no notice, and the input is intact.
	if err := h.SetStatus(ctx, ws, "alice", hub.StatusReady); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("tmux", "-S", tc.Socket, "send-keys", "-t", p, "-l", "half a thought").Run(); err != nil {
		t.Fatal(err)
	}
	if !eventually(func() bool { return strings.Contains(capture(t, tc, p), "half a thought") }) {
		t.Fatal("typed input did not show in the pane")
	}
	send("alice", "six")
	settle()
	if got := notices(); got != 1 {
		t.Errorf("pane with unsent input: got %d notices, want 1", got)
	}
	if strings.Contains(capture(t, tc, p), "half a thought[parley]") {
		t.Errorf("the notice was spliced into the user's input:\n%s", capture(t, tc, p))
	}

	// The input is sent; the pane is idle again: the next message nudges.
	exec.Command("tmux", "-S", tc.Socket, "send-keys", "-t", p, "Enter").Run()
	if !eventually(func() bool { return strings.Contains(capture(t, tc, p), "GOT:half a thought") }) {
		t.Fatal("input line was not submitted")
	}
	send("alice", "seven")
	if !eventually(func() bool { return notices() == 2 }) {
		t.Errorf("idle pane after input was sent: got %d notices, want 2", notices())
	}

	// An agent that did not ask, with nudging not on for all: nothing.
	before := n.Nudged()
	send("quiet", "psst")
	settle()
	if got := n.Nudged(); got != before {
		t.Errorf("agent that did not ask was nudged")
	}
}
