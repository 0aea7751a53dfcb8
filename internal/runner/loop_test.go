package runner_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/api"
)

// TestAutoWakeLoopStopped: two auto-waking agents that answer each other
// every time stop after max_auto_hops automatic replies; the loop is
// reported on the timeline and to the owner; a prompt resumes the agent.
func TestAutoWakeLoopStopped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, opts{config: "max_auto_hops = 4\nauto_turns_per_minute = 6000"})
	m := e.manager()
	dir := t.TempDir()
	// Each answers whatever wakes it by messaging the other.
	for _, p := range [][2]string{{"a", "b"}, {"b", "a"}} {
		mustCall(t, m, "create_agent", map[string]any{"provider": "command", "cwd": dir, "name": p[0],
			"command": fmt.Sprintf("cat >/dev/null; exec %s send %s 'ping from %s'", bin, p[1], p[0])}, nil)
	}
	e.Must("send", "--agent", "alice", "a", "start")

	eventually(t, "the loop to be stopped", func() bool { return hasEvent(activity(t, m, "a"), "loop_stopped", "4 automatic replies") })
	wait(t, m, "a")
	wait(t, m, "b")
	var h api.HistoryResult
	if err := json.Unmarshal([]byte(e.Must("history", "--json", "--limit", "100")), &h); err != nil {
		t.Fatal(err)
	}
	// alice's message, 4 automatic replies, and the report.
	if len(h.Messages) != 6 {
		t.Errorf("history: got %d messages, want 6", len(h.Messages))
	}
	owner := "boss" // the manager that created it
	if r := h.Messages[0]; r.To != owner || r.From != "a" || !strings.Contains(r.Content, "looks like a loop") {
		t.Errorf("newest message: got %+v, want the report to %s", r, owner)
	}
	var st struct{ Snapshot api.ManagedAgent }
	mustCall(t, m, "get_agent_status", map[string]any{"agent_id": "a"}, &st)
	runsBefore := st.Snapshot.Runs

	// More mail does not wake it; a prompt does, and the chain starts over.
	e.Must("send", "--agent", "alice", "a", "still there?")
	mustCall(t, m, "send_agent_prompt", map[string]any{"agent_id": "a", "prompt": "carry on"}, nil)
	eventually(t, "a to run again", func() bool {
		mustCall(t, m, "get_agent_status", map[string]any{"agent_id": "a"}, &st)
		return st.Snapshot.Runs > runsBefore
	})
}

// TestAutoWakeThrottled: below the hop limit, an agent gets at most
// auto_turns_per_minute automatic turns; its mail waits, and it says so.
func TestAutoWakeThrottled(t *testing.T) {
	t.Parallel()
	e := newEnv(t, opts{config: "max_auto_hops = 1000\nauto_turns_per_minute = 2"})
	m := e.manager()
	dir := t.TempDir()
	for _, p := range [][2]string{{"a", "b"}, {"b", "a"}} {
		mustCall(t, m, "create_agent", map[string]any{"provider": "command", "cwd": dir, "name": p[0],
			"command": fmt.Sprintf("cat >/dev/null; exec %s send %s 'ping from %s'", bin, p[1], p[0])}, nil)
	}
	e.Must("send", "--agent", "alice", "a", "start")
	eventually(t, "a to be throttled", func() bool { return hasEvent(activity(t, m, "a"), "note", "auto-wake throttled") })
	wait(t, m, "b")
	var h api.HistoryResult
	json.Unmarshal([]byte(e.Must("history", "--json", "--limit", "100")), &h)
	// alice's message and two turns of each agent, at most.
	if len(h.Messages) > 5 {
		t.Errorf("history: got %d messages, want at most 5 within the first minute", len(h.Messages))
	}
}
