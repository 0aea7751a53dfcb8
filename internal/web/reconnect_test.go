package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// offline cuts the tab off the network (true) or reconnects it.
func offline(t testing.TB, ctx context.Context, off bool) {
	t.Helper()
	must(t, chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		conds := []*network.Conditions{}
		if off {
			conds = append(conds, &network.Conditions{Offline: true, DownloadThroughput: -1, UploadThroughput: -1})
		}
		_, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{MatchedNetworkConditions: conds})
		return err
	})))
}

// TestReconnectCatchesUp: when the page loses the daemon, it says so, tries
// again with backoff, and once back it fetches what it missed. The
// supervision views show the work (Queues, Leases, Health), and an open
// page survives `parley daemon stop && parley daemon start`: it reconnects
// by itself, says so, and shows a message sent after the restart.
func TestReconnectCatchesUp(t *testing.T) {
	e := newEnv(t, `stall_after = "1s"`, "[escalation]\nevery = \"1s\"\nlead = \"@planner\"")
	e.Must("join", "--name", "alice", "--role", "planner")
	ctx := tabFor(t, 3*time.Minute)
	e.signIn(t, ctx)
	// What the page fetches once live is in: a fetch the network loses
	// half-way is the page's "Failed to fetch", which this test would read
	// as an error of its own.
	waitJS(t, ctx, `performance.getEntriesByName("parley:state").length > 0 && window.parley.daemonPID > 0`, 10*time.Second)
	// Off the network, then the stream drops (going offline alone keeps
	// an open WebSocket up in Chromium).
	offline(t, ctx, true)
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.parley.sock.close()`)))
	waitJS(t, ctx, `document.getElementById("conn").textContent === "reconnecting"`, 5*time.Second)
	for i := range 3 {
		e.Must("send", "human:ann", fmt.Sprintf("sent while you were away %d", i), "--agent", "alice")
	}
	offline(t, ctx, false)
	waitJS(t, ctx, `document.getElementById("conn").textContent === "live"`, 15*time.Second)
	waitJS(t, ctx, `[...document.querySelectorAll("#feed .msg .text")].filter(el => el.textContent.startsWith("sent while you were away")).length === 3`, 5*time.Second)

	supervisionViews(t, e, ctx)
	survivesRestart(t, e, ctx)
}

// supervisionViews: a waiting task, a task claimed by bob, bob's
// reservation and carol's refused one, and carol's stall show in the
// Queues, Leases and Health views as they happen.
func supervisionViews(t *testing.T, e *env, ctx context.Context) {
	e.Must("join", "--name", "bob", "--role", "dev")
	e.Must("join", "--name", "carol", "--role", "dev")
	e.Must("send", "queue:build", "build the docs site", "--agent", "alice")
	e.Must("send", "queue:build", "build the release notes", "--agent", "alice")
	e.Must("queue", "claim", "build", "--agent", "bob", "--timeout", "5s")
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`location.hash = "#/queues"`)))
	row := func(state string) string {
		return `document.querySelector('#queues tr[data-state="` + state + `"]')`
	}
	waitJS(t, ctx, row("claimed")+` && `+row("waiting"), 10*time.Second)
	if got := eval[string](t, ctx, row("claimed")+`.innerText`); !strings.Contains(got, "bob") || !strings.Contains(got, "queue:build") || !strings.Contains(got, "build the docs site") {
		t.Errorf("the claimed task's row: %q, want queue:build, the task, and bob", got)
	}
	if got := eval[string](t, ctx, row("waiting")+`.innerText`); !strings.Contains(got, "build the release notes") || !strings.Contains(got, "alice") {
		t.Errorf("the waiting task's row: %q", got)
	}

	e.Must("reserve", "docs/**", "--agent", "bob", "--reason", "rewriting the docs")
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`location.hash = "#/leases"`)))
	waitJS(t, ctx, `document.querySelector('#leases tr[data-agent="bob"]') !== null`, 10*time.Second)
	if got := eval[string](t, ctx, `document.querySelector('#leases tr[data-agent="bob"]').innerText`); !strings.Contains(got, "docs/**") || !strings.Contains(got, "rewriting the docs") || !strings.Contains(got, "exclusive") {
		t.Errorf("bob's lease: %q", got)
	}
	// carol runs into it: the page shows the conflict as it happens.
	if _, _, code := e.Run("reserve", "docs/index.md", "--agent", "carol"); code == 0 {
		t.Fatal("carol's reservation of a file bob holds was granted")
	}
	waitJS(t, ctx, `document.querySelector('#conflicts .clash[data-agent="carol"]') !== null`, 10*time.Second)
	if got := eval[string](t, ctx, `document.querySelector('#conflicts .clash').innerText`); !strings.Contains(got, "reserved by bob") {
		t.Errorf("the conflict: %q, want bob named", got)
	}

	// carol's hooks report a prompt, then nothing: she stalls, and the
	// ladder nudges her, then tells alice (@planner).
	hook := e.Cmd("hook", "claude", "UserPromptSubmit", "--agent", "carol")
	hook.Stdin = strings.NewReader(`{"session_id":"s","cwd":"` + e.home + `","hook_event_name":"UserPromptSubmit","prompt":"go"}`)
	must(t, hook.Run())
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`location.hash = "#/health"`)))
	waitJS(t, ctx, `document.querySelector('#health tr[data-name="carol"][data-health="stalled"]') !== null`, 15*time.Second)
	waitJS(t, ctx, `[...document.querySelectorAll("#escalations .esc")].some(el => el.innerText.includes("carol") && el.innerText.includes("lead"))`, 15*time.Second)
	if got := eval[string](t, ctx, `document.getElementById("n-stalled").textContent`); got != "1" {
		t.Errorf("the Health badge: %q, want 1 stalled", got)
	}
	noErrors(t, ctx)
}

// survivesRestart: the daemon stops and starts again; the open page, not
// reloaded, reconnects to the same port with the same sign-in, says the
// daemon restarted, and shows a message sent after the restart.
func survivesRestart(t *testing.T, e *env, ctx context.Context) {
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`location.hash = "#/feed"; window.parleyLoaded = true`)))
	e.Must("daemon", "stop")
	waitJS(t, ctx, `document.getElementById("conn").textContent !== "live"`, 10*time.Second)
	e.Must("daemon", "start")
	e.Must("send", "human:ann", "sent after the restart", "--agent", "alice")
	waitJS(t, ctx, `document.getElementById("conn").textContent === "live"`, 30*time.Second)
	waitJS(t, ctx, `document.getElementById("conn").title.includes("the daemon restarted")`, 10*time.Second)
	waitJS(t, ctx, `[...document.querySelectorAll("#feed .msg .text")].some(el => el.textContent.startsWith("sent after the restart"))`, 10*time.Second)
	if !eval[bool](t, ctx, `window.parleyLoaded === true`) {
		t.Error("the page was reloaded; want the same page to reconnect")
	}
	// What the page does after the restart is allowed: its session and its
	// CSRF token came back with the daemon.
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("to").value = "alice"; document.getElementById("body").value = "from the page after the restart"`)))
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("send").click()`)))
	waitJS(t, ctx, `[...document.querySelectorAll("#feed .msg .text")].some(el => el.textContent.startsWith("from the page after the restart"))`, 10*time.Second)
	noErrors(t, ctx)
}
