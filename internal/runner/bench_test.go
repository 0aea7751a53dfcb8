package runner_test

import "testing"

// BenchmarkTurn measures one managed-agent turn end to end through the
// manager profile: send_agent_prompt, the provider's process (a shell running
// echo), its output into the timeline, and wait_for_agent returning. It is
// the runner's overhead on top of the provider itself.
func BenchmarkTurn(b *testing.B) {
	e := newEnv(b, opts{})
	m := e.manager()
	mustCall(b, m, "create_agent", map[string]any{"provider": "command", "command": "echo ok", "cwd": b.TempDir(), "name": "bench"}, nil)
	wait(b, m, "bench")
	for b.Loop() {
		mustCall(b, m, "send_agent_prompt", map[string]any{"agent_id": "bench", "prompt": "go"}, nil)
		wait(b, m, "bench")
	}
}
