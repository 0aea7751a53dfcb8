package runner_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/door"
	"github.com/parley-dev/parley/internal/testenv/standin"
)

// TestManagedBypassTakesLetters: a managed Claude Code agent in
// bypassPermissions, one process per turn, busy in a tool call when a
// message comes that its runner cannot steer in: the doorman's letter
// through the session's own door reaches the next model request, right
// after the tool's result. It is never held for a person (the runner
// launches Claude Code with the settings overlay that accepts letters), and
// its copy never reads seen unless the model got it.
func TestManagedBypassTakesLetters(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var tails []string
	s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		tail := r.Tail()
		mu.Lock()
		tails = append(tails, tail)
		mu.Unlock()
		switch {
		case strings.Contains(tail, "SLEEP-PLEASE") && !strings.Contains(tail, "SLEPT"):
			return []standin.Block{standin.ToolUse("toolu_sleep", "Bash", map[string]any{"command": "touch sleeping; sleep 6; echo SLEPT", "description": "sleep"})}
		case strings.Contains(tail, door.LetterMarker):
			return []standin.Block{standin.Text("SAW THE LETTER")}
		}
		return nil
	})
	e := newEnv(t, opts{anthropic: s})
	m := e.manager()
	cwd := t.TempDir()
	mustCall(t, m, "create_agent", map[string]any{"provider": "perturn", "cwd": cwd, "name": "w", "mode": "bypassPermissions", "prompt": "SLEEP-PLEASE"}, nil)
	eventually(t, "the turn's tool call to start", func() bool { _, err := os.Stat(filepath.Join(cwd, "sleeping")); return err == nil })
	alice := e.Session(nil, "--agent", "alice")
	var sent api.SendResult
	mustCall(t, alice, "send_message", map[string]any{"to": "w", "content": "MAIL-MANAGED look now", "deliver": "steer"}, &sent)
	var states []string
	deadline := time.Now().Add(60 * time.Second)
	got := ""
	for got == "" {
		mu.Lock()
		for _, tl := range tails {
			if strings.Contains(tl, door.LetterMarker) && strings.Contains(tl, "MAIL-MANAGED look now") {
				got = tl
			}
		}
		mu.Unlock()
		var st api.MessageStatusResult
		mustCall(t, alice, "message_status", map[string]any{"message_id": sent.MessageID}, &st)
		if len(st.Recipients) == 1 {
			if r := st.Recipients[0]; len(states) == 0 || states[len(states)-1] != r.State {
				states = append(states, r.State)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no model request carried the letter within 60 s; the copy went %v; requests: %q", states, tails)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(got, "SLEPT") {
		t.Errorf("the letter came in a request without the tool's result (it waited for the turn to end?):\n%s", got)
	}
	for _, st := range states {
		if st == "held" || st == "declined" {
			t.Errorf("the copy went %v: a managed agent's session held the letter", states)
		}
	}
	var st api.MessageStatusResult
	mustCall(t, alice, "message_status", map[string]any{"message_id": sent.MessageID}, &st)
	if r := st.Recipients[0]; r.WakePath != "door:claude" {
		t.Errorf("the copy: got %+v, want reached by door:claude", r)
	}
}
