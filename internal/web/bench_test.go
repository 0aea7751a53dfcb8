package web_test

// Benchmarks of the dashboard in Chromium, against the real daemon:
//
//	go test ./internal/web -run '^$' -bench Dashboard -benchtime 1x
//
// BenchmarkDashboardFirstRender: a workspace of 200 agents and 10,000
// messages; from the start of navigation (sign-in link, redirect, page,
// scripts, session, event stream, state) until the roster shows 200 agents
// and the feed its newest message. Its floor, measured in the same page
// and run: fetching the same state (agents and the latest 1,000 messages)
// with nothing drawn.
//
// BenchmarkDashboardFeed1000: messages sent at 1,000 a second for 3 s
// while the page records the time between its animation frames; the feed
// must show every message, and frames must keep coming.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/client"
	"github.com/parley-dev/parley/internal/home"
)

// seed registers agents and sends messages among them over the socket,
// with a few senders at once.
func seed(b *testing.B, e *env, agents, messages int) *client.Client {
	b.Helper()
	paths, err := home.Resolve(e.home)
	if err != nil {
		b.Fatal(err)
	}
	c := client.New(paths)
	ctx := context.Background()
	for i := range agents {
		if _, err := c.As(ws, fmt.Sprintf("agent-%03d", i)).Join(ctx, api.JoinRequest{Name: fmt.Sprintf("agent-%03d", i), Role: []string{"planner", "implementer", "reviewer", "tester"}[i%4]}); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= messages {
					return
				}
				from, to := fmt.Sprintf("agent-%03d", i%agents), fmt.Sprintf("agent-%03d", (i*7+3)%agents)
				if _, err := c.As(ws, from).Send(ctx, api.SendRequest{To: to, Content: fmt.Sprintf("message %d: status of task %d, all checks green", i, i%97)}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return c
}

func BenchmarkDashboardFirstRender(b *testing.B) {
	e := newEnv(b)
	seed(b, e, 200, 10_000)
	var render, floor []float64
	for b.Loop() {
		ctx := tab(b)
		link := e.link()
		must(b, chromedp.Do(ctx, chromedp.Navigate(link)))
		ms := eval[float64](b, ctx, `new Promise(resolve => {
			const check = () => {
				const rows = document.querySelectorAll("#feed .msg .text");
				const done = document.querySelectorAll("#roster .agent").length === 200 &&
					[...rows].some(el => el.textContent.startsWith("message 9999:"));
				if (done) resolve(performance.now()); else requestAnimationFrame(check);
			};
			check();
		})`)
		render = append(render, ms)
		b.Logf("first render %.0f ms; marks %s", ms, eval[string](b, ctx, `performance.getEntriesByType("mark").map(m => m.name + " " + m.startTime.toFixed(0)).join(", ") +
			", domContentLoaded " + performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd.toFixed(0) +
			"; requests " + performance.getEntriesByType("resource").filter(r => r.name.includes("/api/") || r.name.includes("/auth/")).map(r => new URL(r.name).pathname.replace("/api/v1", "") + " " + r.startTime.toFixed(0) + "+" + r.duration.toFixed(0)).join(", ")`))
		f := eval[float64](b, ctx, `(async () => {
			const t = performance.now();
			const [a, m] = await Promise.all([fetch("/api/v1/agents?workspace=web"), fetch("/api/v1/messages?workspace=web&limit=1000")]);
			await a.json(); await m.json();
			return performance.now() - t;
		})()`)
		floor = append(floor, f)
	}
	b.ReportMetric(median(render), "ms/first-render")
	b.ReportMetric(median(floor), "ms/fetch-floor")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkDashboardFeed1000(b *testing.B) {
	e := newEnv(b)
	c := seed(b, e, 50, 1000)
	ctx := tab(b)
	e.signIn(b, ctx)
	waitJS(b, ctx, `window.parley.feed.length === 1000`, 10*time.Second)
	const rate, secs = 1000, 3
	for b.Loop() {
		before := eval[float64](b, ctx, `window.parley.feed.length`)
		record := `window.frames_ = []; window.recording_ = true;
			(() => { let last = performance.now(); const tick = (t) => { window.frames_.push(t - last); last = t; if (window.recording_) requestAnimationFrame(tick); }; requestAnimationFrame(tick); })();`
		// The floor: frames of the same page with nothing arriving.
		must(b, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](record)))
		time.Sleep(time.Second)
		idle := eval[[]float64](b, ctx, `window.recording_ = false, window.frames_`)
		slices.Sort(idle)
		must(b, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](record)))
		start := time.Now()
		var sent atomic.Int64
		var wg sync.WaitGroup
		// Senders, each paced to its share of the rate.
		const senders = 16
		for s := range senders {
			wg.Go(func() {
				for i := s; i < rate*secs; i += senders {
					if d := time.Until(start.Add(time.Duration(i) * time.Second / rate)); d > 0 {
						time.Sleep(d)
					}
					if _, err := c.As(ws, fmt.Sprintf("agent-%03d", i%50)).Send(context.Background(), api.SendRequest{To: fmt.Sprintf("agent-%03d", (i+1)%50), Content: fmt.Sprintf("burst %d", i)}); err != nil {
						b.Error(err)
						return
					}
					sent.Add(1)
				}
			})
		}
		wg.Wait()
		sendTime := time.Since(start)
		want := before + float64(sent.Load())
		waitJS(b, ctx, fmt.Sprintf(`window.parley.feed.length >= %v`, min(want, 20000)), 30*time.Second)
		lag := time.Since(start) - sendTime
		frames := eval[[]float64](b, ctx, `window.recording_ = false, window.frames_`)
		slices.Sort(frames)
		b.ReportMetric(float64(sent.Load())/sendTime.Seconds(), "msgs/s-sent")
		b.ReportMetric(float64(lag.Milliseconds()), "ms-caught-up-after")
		b.ReportMetric(frames[len(frames)/2], "ms/frame-p50")
		b.ReportMetric(frames[len(frames)*99/100], "ms/frame-p99")
		b.ReportMetric(frames[len(frames)-1], "ms/frame-max")
		b.ReportMetric(idle[len(idle)/2], "ms/idle-frame-p50")
		b.ReportMetric(idle[len(idle)*99/100], "ms/idle-frame-p99")
		b.ReportMetric(float64(len(frames))/time.Since(start).Seconds(), "frames/s")
	}
	b.ReportMetric(0, "ns/op")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
