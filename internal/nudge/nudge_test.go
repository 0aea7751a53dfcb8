package nudge_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
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

// paneShows waits until the pane's text satisfies cond. It polls tmux
// without sleeping, so that it works inside a synctest bubble, whose clock
// does not move while a tmux command runs: what it waits for is the pane's
// shell, a real process.
func paneShows(t *testing.T, tc tmux.Client, p string, cond func(string) bool) bool {
	t.Helper()
	for range 2000 {
		if cond(capture(t, tc, p)) {
			return true
		}
	}
	return false
}

// TestNudge runs on a fake clock, so that "nothing happens within the
// debounce" is exact rather than a guess, with a real tmux pane.
func TestNudge(t *testing.T) {
	tc, p := pane(t)
	synctest.Test(t, func(t *testing.T) {
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
		const debounce, cooldown = 2 * time.Second, time.Minute
		n := nudge.New(h, &nudge.Options{
			Debounce: debounce,
			Cooldown: cooldown,
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
		synctest.Wait() // subscribed
		send := func(to, text string) {
			t.Helper()
			if _, err := h.Send(ctx, hub.SendRequest{Workspace: ws, From: "bob", To: to, Content: text}); err != nil {
				t.Fatal(err)
			}
		}
		status := func(s hub.Status) {
			t.Helper()
			if err := h.SetStatus(ctx, ws, "alice", s); err != nil {
				t.Fatal(err)
			}
		}
		// after lets d pass and everything due run; it returns the notices so far.
		after := func(d time.Duration) int {
			time.Sleep(d)
			synctest.Wait()
			return n.Nudged()
		}
		notices := func(s string) int { return strings.Count(s, "GOT:[parley] alice:") }
		// idle waits for the pane's shell to take the last notice, so that
		// the pane's input line is empty again.
		idle := func(want int) {
			t.Helper()
			if !paneShows(t, tc, p, func(s string) bool { return notices(s) == want }) {
				t.Fatalf("the pane shows %d notices, want %d:\n%s", notices(capture(t, tc, p)), want, capture(t, tc, p))
			}
		}

		// A burst of three messages: nothing until the debounce has passed
		// since the first, then one notice for the three.
		send("alice", "one")
		send("alice", "two")
		send("alice", "three")
		if got := after(debounce - time.Millisecond); got != 0 {
			t.Fatalf("within the debounce: got %d notices, want 0", got)
		}
		if got := after(time.Millisecond); got != 1 {
			t.Fatalf("once the debounce passed: got %d notices, want 1", got)
		}
		idle(1)
		if want := nudge.Notice("alice", 3, "bob"); !strings.Contains(capture(t, tc, p), "GOT:"+want) {
			t.Errorf("pane lacks the notice %q:\n%s", want, capture(t, tc, p))
		}

		// Until alice changes her status or the cooldown passes, more mail
		// does not nudge her again.
		send("alice", "four")
		if got := after(debounce); got != 1 {
			t.Errorf("a second burst within the cooldown: got %d notices, want 1", got)
		}
		time.Sleep(cooldown)
		send("alice", "five")
		if got := after(debounce); got != 2 {
			t.Errorf("a burst after the cooldown: got %d notices, want 2", got)
		}
		idle(2)
		status(hub.StatusWork)
		status(hub.StatusReady) // a status change re-arms at once
		send("alice", "six")
		if got := after(debounce); got != 3 {
			t.Errorf("a burst after a status change: got %d notices, want 3", got)
		}
		idle(3)

		// At work: no notice.
		status(hub.StatusWork)
		send("alice", "seven")
		if got := after(debounce); got != 3 {
			t.Errorf("agent at work: got %d notices, want 3", got)
		}

		// Ready, but the pane holds unsent input: no notice, and the input
		// is intact.
		status(hub.StatusReady)
		if err := exec.Command("tmux", "-S", tc.Socket, "send-keys", "-t", p, "-l", "half a thought").Run(); err != nil {
			t.Fatal(err)
		}
		if !paneShows(t, tc, p, func(s string) bool { return strings.Contains(s, "half a thought") }) {
			t.Fatal("typed input did not show in the pane")
		}
		send("alice", "eight")
		if got := after(debounce); got != 3 {
			t.Errorf("pane with unsent input: got %d notices, want 3", got)
		}
		if strings.Contains(capture(t, tc, p), "half a thought[parley]") {
			t.Errorf("the notice was spliced into the user's input:\n%s", capture(t, tc, p))
		}

		// The input is sent; the pane is idle again: the next message nudges.
		exec.Command("tmux", "-S", tc.Socket, "send-keys", "-t", p, "Enter").Run()
		if !paneShows(t, tc, p, func(s string) bool { return strings.Contains(s, "GOT:half a thought") }) {
			t.Fatal("input line was not submitted")
		}
		send("alice", "nine")
		if got := after(debounce); got != 4 {
			t.Errorf("idle pane after input was sent: got %d notices, want 4", got)
		}
		idle(4)

		// An agent that did not ask, with nudging not on for all: nothing.
		send("quiet", "psst")
		if got := after(debounce); got != 4 {
			t.Errorf("agent that did not ask was nudged: got %d notices, want 4", got)
		}
		cancel()
		synctest.Wait()
	})
}
