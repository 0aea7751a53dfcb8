package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-dev/parley/internal/store/postgres/pgtest"
	"github.com/parley-dev/parley/internal/testenv"
)

// TestDashboardAcrossDaemons: two daemons share one PostgreSQL database; a
// dashboard signed in to daemon B shows, live, a message sent through daemon
// A, and the run it starts on B's managed agent (auto-wake heard A's send).
func TestDashboardAcrossDaemons(t *testing.T) {
	ctx := tab(t)
	dsn := pgtest.Database(t)
	daemon := func() *env {
		te := testenv.New(t, bin, &testenv.Options{Prefix: "plw", Start: true,
			Env: []string{"PARLEY_WORKSPACE=" + ws, "PARLEY_STORE=" + dsn}})
		return &env{Env: te, t: t, home: te.Home}
	}
	a, b := daemon(), daemon()
	a.Must("join", "--name", "alice", "--role", "lead")
	b.Must("agent", "create", "--provider", "command", "--command", "echo handled {prompt}", "--name", "builder",
		"--title", "builder on B", "--cwd", t.TempDir())
	b.signIn(t, ctx)
	// The managed agent's page, before any run: its timeline is empty.
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`location.hash = "#/managed/builder"`)))
	waitJS(t, ctx, `document.getElementById("timeline") !== null && window.parley.managed.some(m => m.agent_id === "builder" && m.runs === 0)`, 10*time.Second)

	const text = "compile the docs, from A"
	start := time.Now()
	a.Must("send", "builder", text, "--agent", "alice")
	waitJS(t, ctx, `window.parley.feed.some(m => m.text === `+js(text)+` && m.from === "alice")`, 10*time.Second)
	t.Logf("A's message in B's dashboard after %v", time.Since(start).Round(time.Millisecond))
	// The command echoes its prompt, which carries the message.
	waitJS(t, ctx, `(t => t.includes("handled") && t.includes(`+js(text)+`))(document.getElementById("timeline").innerText)`, 20*time.Second)
	t.Logf("the run it started on B in B's dashboard after %v", time.Since(start).Round(time.Millisecond))
	// The managed list refreshes on the run's events, a moment after the
	// timeline shows its output: wait for it, then check it counted once.
	waitJS(t, ctx, `window.parley.managed.find(m => m.agent_id === "builder").runs >= 1`, 10*time.Second)
	if runs := eval[float64](t, ctx, `window.parley.managed.find(m => m.agent_id === "builder").runs`); runs != 1 {
		t.Errorf("builder's runs shown on B: %v, want 1", runs)
	}
	noErrors(t, ctx)
}
