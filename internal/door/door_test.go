package door_test

// The doors of the real Claude Code and Codex CLIs (test/npm), run
// interactively in tmux with only the model replaced by a stand-in. Each
// test starts one session and shares it across its subtests: a start costs
// seconds.

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/door"
	"github.com/parley-dev/parley/internal/testenv"
	"github.com/parley-dev/parley/internal/testenv/standin"
	"github.com/parley-dev/parley/internal/testenv/tmuxcli"
)

// turns records the requests of a stand-in by the text they add, so that a
// test can wait for the one that carries its letter.
type turns struct {
	mu    sync.Mutex
	tails []string
	more  chan struct{} // closed and replaced by each add
}

func (t *turns) add(tail string) {
	t.mu.Lock()
	t.tails = append(t.tails, tail)
	if t.more != nil {
		close(t.more)
	}
	t.more = make(chan struct{})
	t.mu.Unlock()
}

// wait returns the first request tail that contains sub. It looks again at
// each request the stand-in records, and fails the test after within.
func (t *turns) wait(tb testing.TB, within time.Duration, sub string, screen func() string) string {
	tb.Helper()
	timeout := time.NewTimer(within)
	defer timeout.Stop()
	for {
		t.mu.Lock()
		for _, s := range t.tails {
			if strings.Contains(s, sub) {
				t.mu.Unlock()
				return s
			}
		}
		if t.more == nil {
			t.more = make(chan struct{})
		}
		more := t.more
		t.mu.Unlock()
		select {
		case <-more:
		case <-timeout.C:
			tb.Fatalf("no model request carried %q within %s; screen:\n%s", sub, within, screen())
		}
	}
}

// short is the ends of the tails, for a failure message.
func (t *turns) short() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, s := range t.tails {
		if len(s) > 120 {
			s = "…" + s[len(s)-120:]
		}
		out = append(out, s)
	}
	return out
}

// index is the number of the first request that carried sub, or -1.
func (t *turns) index(sub string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, s := range t.tails {
		if strings.Contains(s, sub) {
			return i
		}
	}
	return -1
}

func (t *turns) count(sub string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, s := range t.tails {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// waitFile waits for a file the model's command creates as it starts. The
// command runs in a process the CLI starts, not ours: the file is the only
// sign that it runs, so waitFile polls for it, up to a deadline.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 30 s: the command did not start", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestClaudeInbox(t *testing.T) {
	var seen turns
	model := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		tail := r.Tail()
		seen.add(tail)
		switch {
		case strings.Contains(tail, "SLEEP-PLEASE") && !strings.Contains(tail, "SLEPT"):
			return []standin.Block{standin.ToolUse("toolu_sleep", "Bash", map[string]any{"command": "touch sleeping; sleep 4; echo SLEPT", "description": "sleep"})}
		case strings.Contains(tail, "LETTER-"):
			return []standin.Block{standin.Text("SAW " + tail[strings.Index(tail, "LETTER-"):][:9])}
		}
		return nil
	})
	srv := tmuxcli.NewServer(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".claude"), 0o700)
	os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(`{"permissions":{"allow":["Bash"]}}`), 0o600)
	cc := srv.StartClaude("cc", model, tmuxcli.ClaudeOptions{Dir: dir})
	sess := cc.Session()
	ctx := context.Background()

	t.Run("idle session starts a turn", func(t *testing.T) {
		c := &door.Claude{Socket: sess.Socket}
		if _, err := c.Write(ctx, door.ClaudeLetter{Text: "LETTER-01 from the bus"}); err != nil {
			t.Fatal(err)
		}
		seen.wait(t, 30*time.Second, "LETTER-01 from the bus", cc.Screen)
		cc.WaitScreen(20*time.Second, "SAW LETTER-01")
	})

	t.Run("idle notice after the turn that took the letter", func(t *testing.T) {
		l, err := door.Listen(filepath.Dir(sess.Socket))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		c := &door.Claude{Socket: sess.Socket, Token: "not-checked-on-unix"}
		rc, err := c.Write(ctx, door.ClaudeLetter{Text: "LETTER-02 with a receipt", Reply: l})
		if err != nil {
			t.Fatal(err)
		}
		// In default mode the session holds nothing: the first word is
		// that it is idle again.
		select {
		case r, ok := <-rc.C:
			if !ok || r.Status != door.ReceiptIdle {
				t.Fatalf("receipt: got %+v (ok %v), want the idle notice", r, ok)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no idle notice within 30 s:\n%s", cc.Screen())
		}
		rc.Close()
		// The notice means the turn is over: it carried the letter.
		if seen.count("LETTER-02 with a receipt") == 0 {
			t.Errorf("the idle notice came before any model request carried the letter")
		}
		if l.Pending() != 0 {
			t.Errorf("%d letters still pending after Close", l.Pending())
		}
	})

	t.Run("busy session gets it before its next model request", func(t *testing.T) {
		c := &door.Claude{Socket: sess.Socket}
		if _, err := c.Write(ctx, door.ClaudeLetter{Text: "SLEEP-PLEASE"}); err != nil {
			t.Fatal(err)
		}
		waitFile(t, filepath.Join(dir, "sleeping"))
		if _, err := c.Write(ctx, door.ClaudeLetter{Text: "LETTER-03 while busy"}); err != nil {
			t.Fatal(err)
		}
		// The request right after the tool's result carries the letter
		// beside it: the running tool call was not interrupted, and the
		// letter did not wait for the turn to end.
		tail := seen.wait(t, 30*time.Second, "LETTER-03 while busy", cc.Screen)
		if !strings.Contains(tail, "SLEPT") {
			t.Errorf("the letter came in a request without the tool's result (a turn of its own?):\n%s", tail)
		}
	})

	t.Run("priority now", func(t *testing.T) {
		c := &door.Claude{Socket: sess.Socket}
		if _, err := c.Write(ctx, door.ClaudeLetter{Text: "LETTER-04 now", Priority: door.PriorityNow}); err != nil {
			t.Fatal(err)
		}
		seen.wait(t, 30*time.Second, "LETTER-04 now", cc.Screen)
	})

	t.Run("bad letters are refused before any write", func(t *testing.T) {
		c := &door.Claude{Socket: sess.Socket}
		for _, l := range []door.ClaudeLetter{{Text: ""}, {Text: strings.Repeat("x", door.MaxText+1)}, {Text: "x", Priority: "later"}} {
			if _, err := c.Write(ctx, l); err == nil || door.IsGone(err) {
				t.Errorf("letter of %d bytes, priority %q: got %v, want an error", len(l.Text), l.Priority, err)
			}
		}
	})

	t.Run("session gone", func(t *testing.T) {
		// A socket file nobody listens on (a killed session's): refused.
		stale := filepath.Join(srv.Dir(), "stale.sock")
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		ln.SetUnlinkOnClose(false)
		ln.Close()
		_, err = (&door.Claude{Socket: stale}).Write(ctx, door.ClaudeLetter{Text: "x"})
		if !door.IsGone(err) {
			t.Errorf("stale socket: got %v, want the session gone", err)
		}
		// The session exits and takes its socket with it: once its
		// process is gone, the first letter finds the door gone.
		cc.Kill()
		if !cc.WaitExit(20 * time.Second) {
			t.Fatalf("claude (pid %d) still runs 20 s after its tmux session was killed", cc.PID)
		}
		_, err = (&door.Claude{Socket: sess.Socket}).Write(ctx, door.ClaudeLetter{Text: "LETTER-05 too late"})
		if !door.IsGone(err) || !errors.Is(err, os.ErrNotExist) && !strings.Contains(err.Error(), "refused") {
			t.Errorf("after the session ended: got %v, want the session gone", err)
		}
	})
}

func TestCodexQueue(t *testing.T) {
	var seen turns
	model := standin.OpenAI(t, func(r *standin.ResponsesRequest) []standin.Item {
		tail := r.Tail()
		seen.add(tail)
		switch {
		case strings.Contains(tail, "SLEEP-PLEASE") && !strings.Contains(tail, "SLEPT"):
			return []standin.Item{standin.FunctionCall("call_sleep", "", "exec_command", map[string]any{"cmd": "touch sleeping; sleep 4; echo SLEPT"})}
		case strings.Contains(tail, "LETTER-"):
			return []standin.Item{standin.Message("SAW " + tail[strings.Index(tail, "LETTER-"):][:9])}
		}
		return nil
	})
	srv := tmuxcli.NewServer(t)
	cxDir := t.TempDir()
	cx := srv.StartCodex("cx", model, tmuxcli.CodexOptions{Dir: cxDir})
	cx.Type("FIRST-TURN hello")                              // a thread is written with its first turn
	seen.wait(t, time.Minute, "FIRST-TURN hello", cx.Screen) // Codex starts slowly on a loaded machine
	thread := cx.Thread()
	ctx := context.Background()
	c := &door.Codex{Home: cx.Home, Thread: thread}
	// waitIdle waits for the turn the test last started to end. Each
	// caller has seen that turn's model request (so it runs, or ran), and
	// queued nothing else: the thread's status on the app-server, which
	// is what Queue and Steer act on, says idle only once it is over.
	waitIdle := func(t *testing.T) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			st, err := c.Status(ctx)
			if err == nil && st == "idle" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("codex still busy after 30 s (status %q, %v):\n%s", st, err, cx.Screen())
			}
			time.Sleep(100 * time.Millisecond) // a poll: the status has no wait of its own
		}
	}

	t.Run("idle thread starts a turn", func(t *testing.T) {
		waitIdle(t)
		q, err := c.Queue(ctx, "LETTER-11 from the bus")
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		if q.ID == "" {
			t.Fatal("no queued submission id")
		}
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := q.Started(sctx); err != nil {
			t.Fatalf("started: %v\n%s", err, cx.Screen())
		}
		seen.wait(t, 30*time.Second, "LETTER-11 from the bus", cx.Screen)
		cx.WaitScreen(20*time.Second, "SAW LETTER-11")
	})

	t.Run("busy thread: queued until the turn ends, steered at once", func(t *testing.T) {
		waitIdle(t)
		q, err := c.Queue(ctx, "SLEEP-PLEASE")
		if err != nil {
			t.Fatal(err)
		}
		q.Close()
		waitFile(t, filepath.Join(cxDir, "sleeping"))
		queued, err := c.Queue(ctx, "LETTER-12 queued while busy")
		if err != nil {
			t.Fatal(err)
		}
		defer queued.Close()
		steered, err := c.Steer(ctx, "LETTER-13 steered while busy")
		if err != nil || !steered {
			t.Fatalf("steer into the running turn: %v %v", steered, err)
		}
		// The steered letter rides in the running turn: beside the tool's
		// output, or right after it (Codex takes steered input at its next
		// request); the queued one waits for the turn to end.
		seen.wait(t, 30*time.Second, "LETTER-13 steered while busy", cx.Screen)
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := queued.Started(sctx); err != nil {
			t.Fatal(err)
		}
		seen.wait(t, 30*time.Second, "LETTER-12 queued while busy", cx.Screen)
		cx.WaitScreen(20*time.Second, "SAW LETTER-12")
		steer, queue, output := seen.index("LETTER-13"), seen.index("LETTER-12"), seen.index("SLEPT")
		if steer > queue || queue <= output {
			t.Errorf("requests: the tool output in %d, the steered letter in %d, the queued one in %d; want output <= steered <= queued, output < queued: %q",
				output, steer, queue, seen.short())
		}
	})

	t.Run("steer without a turn in progress writes nothing", func(t *testing.T) {
		waitIdle(t)
		if st, err := c.Status(ctx); err != nil || st != "idle" {
			t.Errorf("status of the idle thread: got %q, %v; want idle", st, err)
		}
		ok, err := c.Steer(ctx, "LETTER-14 steer idle")
		if err != nil || ok {
			t.Fatalf("steer into an idle thread: got %v %v, want false and no error", ok, err)
		}
	})

	t.Run("unknown thread is refused", func(t *testing.T) {
		_, err := (&door.Codex{Home: cx.Home, Thread: "01a21a39-0000-7000-8000-000000000000"}).Queue(ctx, "LETTER-15")
		if !door.IsRefused(err) {
			t.Fatalf("unknown thread: got %v, want a refusal", err)
		}
		// The app-server's own words, once: its error answer is the refusal.
		// (Queue reads the thread's status first: that is what refuses.)
		if msg := err.Error(); !strings.HasPrefix(msg, "codex queue: thread/read: ") || !strings.Contains(msg, " (code -32") ||
			strings.Contains(msg, door.ErrRefused.Error()) {
			t.Errorf("unknown thread: got %q, want codex queue: thread/read: <the app-server's words> (code -32...)", msg)
		}
	})

	// A `codex exec` thread runs in its own process, not on the
	// app-server: there it is not loaded, and what is queued for it waits
	// until some client resumes it (openai/codex#44491; an exec run's
	// queue may drop it, #41060).
	t.Run("thread not loaded: not queued, unless resumed", func(t *testing.T) {
		ectx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		ex := exec.CommandContext(ectx, standin.CLI(t, "codex"), "exec", "--json", "--skip-git-repo-check", "EXEC-TURN hello")
		ex.Dir, ex.WaitDelay = cxDir, 5*time.Second
		ex.Env = []string{"HOME=" + cx.Home, "CODEX_HOME=" + cx.Home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + srv.Dir(), testenv.GoRace()}
		out, err := ex.CombinedOutput()
		if err != nil {
			t.Fatalf("codex exec: %v\n%s", err, out)
		}
		execThread := execThreadOf(out)
		if execThread == "" {
			t.Fatalf("no thread.started in codex exec's output:\n%s", out)
		}
		e := &door.Codex{Home: cx.Home, Thread: execThread}
		if st, err := e.Status(ctx); err != nil || st != "notLoaded" {
			t.Fatalf("status of the exec thread on the app-server: %q, %v; want notLoaded", st, err)
		}
		if _, err := e.Queue(ctx, "LETTER-17 not loaded"); !door.IsNotLoaded(err) {
			t.Fatalf("queue to a thread not loaded: got %v, want ErrNotLoaded", err)
		}
		e.Resume = true
		q, err := e.Queue(ctx, "LETTER-18 resumed")
		if err != nil {
			t.Fatalf("queue with resume: %v", err)
		}
		defer q.Close()
		if !q.Resumed {
			t.Error("Resumed: false, want true")
		}
		sctx, scancel := context.WithTimeout(ctx, time.Minute)
		defer scancel()
		if err := q.Started(sctx); err != nil {
			t.Fatalf("started: %v", err)
		}
		seen.wait(t, 30*time.Second, "LETTER-18 resumed", cx.Screen)
		if seen.count("LETTER-17") != 0 {
			t.Errorf("the letter not queued reached the model: %q", seen.short())
		}
	})

	t.Run("no app-server is gone", func(t *testing.T) {
		_, err := (&door.Codex{Home: t.TempDir(), Thread: thread}).Queue(ctx, "LETTER-16")
		if !door.IsGone(err) {
			t.Fatalf("CODEX_HOME without an app-server: got %v, want the session gone", err)
		}
	})
}

// execThreadOf returns the thread id of a `codex exec --json` run.
func execThreadOf(out []byte) string {
	for _, l := range strings.Split(string(out), "\n") {
		var ev struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread_id"`
		}
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Type == "thread.started" {
			return ev.ThreadID
		}
	}
	return ""
}
