package web_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

var screenshots = flag.String("screenshots", "", "write screenshots of the main pages to this directory (docs/dashboard)")

// TestScreenshots fills a workspace the way a team would and photographs
// the main pages, for the README. It runs only with -screenshots DIR.
func TestScreenshots(t *testing.T) {
	if *screenshots == "" {
		t.Skip("pass -screenshots DIR to write the dashboard's screenshots")
	}
	e := newEnv(t, fmt.Sprintf(`[[upstream]]
name = "parley"
command = %q
args = ["mcp", "serve", "--agent", "gateway-probe", "--workspace", "tools"]

[[upstream]]
name = "jira"
url = "http://127.0.0.1:9/mcp"
`, bin), withClaude(t))
	for _, a := range [][2]string{{"atlas", "planner"}, {"bramble", "implementer"}, {"cedar", "implementer"}, {"delta", "reviewer"}, {"ember", "tester"}, {"fjord", "docs"}} {
		e.Must("join", "--name", a[0], "--role", a[1])
	}
	e.Must("group", "create", "backend")
	e.Must("status", "work", "--agent", "bramble")
	e.Must("status", "work", "--agent", "cedar")
	say := func(from, to, text string, extra ...string) {
		e.Must(append([]string{"send", to, text, "--agent", from}, extra...)...)
	}
	say("atlas", "@implementer", "Plan for today: bramble takes the session store (PR 212), cedar the login flow (PR 214). Reviews go to delta.")
	say("bramble", "atlas", "On it. The store needs a migration: adding expires_at to sessions.")
	say("cedar", "atlas", "Login flow: I will keep the old endpoint until the clients move.")
	say("ember", "@everyone", "CI is red on main: TestSessionExpiry fails on PostgreSQL only.", "--priority", "high")
	say("bramble", "ember", "That is mine, the migration sets a default in UTC but the test reads local time. Fixing.")
	say("delta", "cedar", "PR 214: the redirect after login drops the ?next= parameter. Otherwise fine.")
	say("cedar", "delta", "Good catch, pushed a fix with a test.")
	say("atlas", "human:ann", "Do we ship the login flow today or wait for the mobile client?")
	say("ember", "@everyone", "Production login errors at 4% since 10:12 — rolling back the config change.", "--priority", "critical")
	say("fjord", "atlas", "Docs for the new session settings are in docs/sessions.md; please review when you can.", "--priority", "low")
	say("delta", "bramble", "PR 212 approved. One nit about the index name.")
	say("bramble", "delta", "Renamed the index; merging after CI.")

	dir := t.TempDir()
	e.Must("agent", "create", "--provider", "claude", "--cwd", dir, "--name", "migrator", "--title", "Backfill session expiry", "need permission please")
	e.Must("agent", "create", "--provider", "claude", "--cwd", dir, "--name", "linter", "--title", "Fix lint warnings in auth/", "set title Fix lint warnings in auth/")
	e.Must("agent", "wait", "linter", "--timeout", "30s")
	e.Must("agent", "prompt", "linter", "send to delta: lint is clean in auth/, ready for review")
	e.Must("agent", "wait", "linter", "--timeout", "30s")

	ctx := tab(t)
	e.signIn(t, ctx)
	dir = *screenshots
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := func(name, hash, ready string) {
		t.Helper()
		must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`location.hash = `+js(hash))))
		waitJS(t, ctx, ready, 10*time.Second)
		// Let the last frame paint.
		waitJS(t, ctx, `new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, 5*time.Second)
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		must(t, err)
		must(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
	}
	waitJS(t, ctx, `document.querySelectorAll("#feed .msg").length >= 12 && document.querySelectorAll("#roster .agent").length >= 6`, 10*time.Second)
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll("#feed .msg")].find(el => el.textContent.includes("ship the login")).click()`)))
	shot("feed", "#/feed", `document.querySelectorAll("#thread .tmsg").length === 1`)
	shot("agents", "#/agents", `document.querySelectorAll("#agents tbody tr").length >= 6`)
	shot("managed", "#/managed/linter", `[...document.querySelectorAll("#timeline .ev")].length > 5`)
	shot("permissions", "#/permissions", `document.querySelector(".perm") !== null`)
	e.Must("join", "--name", "orion", "--role", "planner", "--workspace", "mobile-app")
	e.Must("join", "--name", "pixel", "--role", "implementer", "--workspace", "mobile-app")
	e.Must("send", "@everyone", "Release 4.2 goes to the store on Thursday.", "--agent", "orion", "--workspace", "mobile-app")
	shot("workspaces", "#/workspaces", `document.querySelectorAll("#workspaces tbody tr").length >= 2 && [...document.querySelectorAll("#workspaces tbody td:nth-child(2)")].every(td => td.textContent)`)
	shot("gateway", "#/gateway", `document.querySelector("#upstreams .state.ready") !== null && document.querySelector("#upstreams .state.failed") !== null`)
}
