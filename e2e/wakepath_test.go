package e2e

import (
	"testing"

	"github.com/parley-dev/parley/internal/api"
)

// TestWakePaths: each delivery records the path that first reached its
// recipient, and when: a wait, a check of the inbox, a hook that told the
// session (and not the check that read it after). The channel, tmux and
// managed paths are checked by their own tests (TestChannelPush,
// TestTmuxNudgeThroughDaemon, the runner's TestAutoWake).
func TestWakePaths(t *testing.T) {
	e := newEnv(t)
	const ws = "w"
	alice := e.Session(nil, "--agent", "alice", "--workspace", ws)
	bob := e.Session(nil, "--agent", "bob", "--workspace", ws)
	send := func(content string) string {
		t.Helper()
		var sent api.SendResult
		mustCall(t, alice, "send_message", map[string]any{"to": "bob", "content": content}, &sent)
		return sent.MessageID
	}
	wakePath := func(id string) (string, string) {
		t.Helper()
		var st api.MessageStatusResult
		e.MustJSON(&st, "delivery", id, "--agent", "alice", "--workspace", ws)
		if len(st.Recipients) != 1 {
			t.Fatalf("delivery %s: got %+v, want bob's copy", id, st)
		}
		return st.Recipients[0].WakePath, st.Recipients[0].WokenAt
	}

	first := send("one")
	if p, at := wakePath(first); p != "" || at != "" {
		t.Errorf("before anything reached bob: got %q at %q, want none", p, at)
	}
	mustCall(t, bob, "wait_for_message", map[string]any{"timeout": 10}, nil)
	if p, at := wakePath(first); p != "wait" || at == "" {
		t.Errorf("after wait_for_message: got %q at %q, want wait with a time", p, at)
	}

	second := send("two")
	mustCall(t, bob, "check_messages", nil, nil)
	if p, _ := wakePath(second); p != "check" {
		t.Errorf("after check_messages: got %q, want check", p)
	}

	third := send("three")
	e.hook(t, "UserPromptSubmit", map[string]any{"prompt": "go on"}, "--agent", "bob", "--workspace", ws)
	p, at := wakePath(third)
	if p != "hook" || at == "" {
		t.Errorf("after the hook told bob: got %q at %q, want hook", p, at)
	}
	mustCall(t, bob, "check_messages", nil, nil)
	if p2, at2 := wakePath(third); p2 != "hook" || at2 != at {
		t.Errorf("after the check that read it: got %q at %q, want still hook at %q", p2, at2, at)
	}

	// A made-up path is refused.
	hc := e.httpClient()
	defer hc.CloseIdleConnections()
	if code, body, err := e.apiCall(t.Context(), hc, "POST", "/inbox/woken", ws, "bob",
		api.NoteWakeRequest{MessageIDs: []string{third}, Via: "carrier-pigeon"}); err != nil || code != 400 {
		t.Errorf("note_wake with an unknown path: got %d %s (%v), want 400", code, body, err)
	}
}
