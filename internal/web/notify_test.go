package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestPushNotifications: the daemon pushes notices to a local webhook
// receiver for a permission request, a critical message, a failed run and a
// stalled run (once the escalation ladder reaches the person: nudge, lead,
// person, a step a second here), while another endpoint is broken.
func TestPushNotifications(t *testing.T) {
	got := make(chan map[string]any, 20)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		json.Unmarshal(b, &m)
		got <- m
	}))
	defer rcv.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	e := newEnv(t, fmt.Sprintf(`stall_after = "1s"

[escalation]
every = "1s"

[[notify]]
name = "broken"
url = "http://%s/nothing"

[[notify]]
url = %q
`, dead, rcv.URL+"/hook"), withClaude(t))
	e.Must("join", "--name", "alice", "--role", "planner")

	wait := func(kind, agent string) map[string]any {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case m := <-got:
				if m["kind"] == kind && m["agent"] == agent {
					return m
				}
			case <-deadline:
				t.Fatalf("no %s notice for %s", kind, agent)
			}
		}
	}
	dir := t.TempDir()
	e.Must("agent", "create", "--provider", "claude", "--cwd", dir, "--name", "asker", "need permission please")
	if m := wait("permission", "asker"); m["title"] != "asker asks to use Bash" || m["workspace"] != ws {
		t.Errorf("permission notice: %v", m)
	}
	start := time.Now()
	e.Must("send", "bob", "the build is on fire", "--agent", "alice", "--priority", "critical")
	if m := wait("critical", "alice"); m["message"] != "the build is on fire" {
		t.Errorf("critical notice: %v", m)
	}
	t.Logf("critical notice %v after the send began, with a broken endpoint beside", time.Since(start).Round(time.Millisecond))
	e.Must("agent", "create", "--provider", "claude", "--cwd", dir, "--name", "failer", "please fail")
	wait("agent_error", "failer")
	e.Must("agent", "create", "--provider", "claude", "--cwd", dir, "--name", "sleeper", "sleep 30")
	wait("agent_stalled", "sleeper")
}
