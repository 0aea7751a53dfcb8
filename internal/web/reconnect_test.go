package web_test

import (
	"context"
	"fmt"
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
// again with backoff, and once back it fetches what it missed.
func TestReconnectCatchesUp(t *testing.T) {
	e := newEnv(t)
	e.Must("join", "--name", "alice", "--role", "planner")
	ctx := tab(t)
	e.signIn(t, ctx)
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
}
