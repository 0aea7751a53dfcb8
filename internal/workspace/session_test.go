package workspace

import (
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/hub"
)

func TestSessionName(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	a, from, ok := SessionName(env("CLAUDE_CODE_SESSION_ID", "77a64bd3-1111"), "/home/u/My Repo!")
	if !ok || from != "CLAUDE_CODE_SESSION_ID" || !strings.HasPrefix(a, "claude-My-Repo-") {
		t.Fatalf("claude session: %q from %q (%v)", a, from, ok)
	}
	if err := hub.ValidName("agent name", a); err != nil {
		t.Errorf("%q: %v", a, err)
	}
	again, _, _ := SessionName(env("CLAUDE_CODE_SESSION_ID", "77a64bd3-1111"), "/home/u/My Repo!")
	other, _, _ := SessionName(env("CLAUDE_CODE_SESSION_ID", "0c1d2e3f-2222"), "/home/u/My Repo!")
	if again != a || other == a {
		t.Errorf("one session twice: %q, %q; another session: %q; want the same, then another", a, again, other)
	}
	// PARLEY_SESSION wins: any client can name its sessions.
	if n, from, _ := SessionName(env("CLAUDE_CODE_SESSION_ID", "x", EnvSession, "s1"), "/r/parley"); from != EnvSession || !strings.HasPrefix(n, "session-parley-") {
		t.Errorf("PARLEY_SESSION: %q from %q", n, from)
	}
	// A Codex thread (its shell commands' CODEX_THREAD_ID; its hooks and
	// MCP server pass theirs under this key) names a session of its own.
	n, from, ok := SessionName(env(EnvCodexThread, "01a21a39-e463"), "/r/parley")
	if !ok || from != EnvCodexThread || !strings.HasPrefix(n, "codex-parley-") || hub.ValidName("agent name", n) != nil {
		t.Errorf("CODEX_THREAD_ID: %q from %q", n, from)
	}
	if o, _, _ := SessionName(env(EnvCodexThread, "01a21a39-e464"), "/r/parley"); o == n {
		t.Errorf("two Codex threads: both %q", n)
	}
	// A thread from a hook's input: what the Codex inherited does not count.
	inherited := CodexThreadEnv("01a21a39-e463")
	if o, _, _ := SessionName(inherited, "/r/parley"); o != n || inherited("CLAUDE_CODE_SESSION_ID") != "" || inherited(EnvSession) != "" {
		t.Errorf("CodexThreadEnv: %q, want %q and no other session", o, n)
	}
	if n, _, ok := SessionName(env(), "/r/parley"); ok {
		t.Errorf("no session: got %q", n)
	}
	if n, _, ok := SessionName(env(EnvSession, "s"), "/"); !ok || hub.ValidName("agent name", n) != nil {
		t.Errorf("root directory: %q", n)
	}
}

// TestSessionKey: a session's key names it without its id, the same for
// every process of the session, another for another session or client.
func TestSessionKey(t *testing.T) {
	a := Session{Client: "claude", ID: "77a64bd3-1111"}
	if k := a.Key(); !strings.HasPrefix(k, "claude:") || len(k) != len("claude:")+32 || strings.Contains(k, a.ID) {
		t.Errorf("key %q", k)
	}
	if a.Key() != (Session{Client: "claude", ID: "77a64bd3-1111", Env: "X"}).Key() {
		t.Error("the key depends on where the session came from")
	}
	for _, b := range []Session{{Client: "claude", ID: "77a64bd3-1112"}, {Client: "codex", ID: "77a64bd3-1111"}} {
		if a.Key() == b.Key() {
			t.Errorf("%+v and %+v share a key", a, b)
		}
	}
	if (Session{}).Key() != "" {
		t.Error("no session has a key")
	}
}
