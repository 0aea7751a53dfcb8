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
// BenchmarkDashboardFeed1000: messages sent at 1,000 a second for 3 s (on
// a schedule, up to 64 at once, over keep-alive connections) while the page
// records the time between its animation frames; the feed must show every
// message, and frames must keep coming. Its floor: the frames of the same
// page for a second with nothing arriving. Beside them, the CPU time the
// browser and the daemon spent per 1,000 messages, and the load average
// before and after: on two shared cores the frames depend on what else runs.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	load := loadAvg()
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
	b.ReportMetric(load, "load1-before")
	b.ReportMetric(loadAvg(), "load1-after")
	b.ReportMetric(median(render), "ms/first-render")
	b.ReportMetric(median(floor), "ms/fetch-floor")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkDashboardFeed1000(b *testing.B) {
	e := newEnv(b)
	seed(b, e, 50, 1000)
	ctx := tab(b)
	e.signIn(b, ctx)
	waitJS(b, ctx, `window.parley.feed.length === 1000`, 10*time.Second)
	snd := newSender(b, e)
	const rate, secs = 1000, 3
	for b.Loop() {
		load := loadAvg()
		before := eval[float64](b, ctx, `window.parley.feed.length`)
		// Each recording stops the one before it: two loops would count
		// every frame twice.
		record := `(() => { const gen = window.recording_ = (window.recording_ || 0) + 1; const frames = window.frames_ = [];
			let last = performance.now(); const tick = (t) => { if (window.recording_ !== gen) return; frames.push(t - last); last = t; requestAnimationFrame(tick); };
			requestAnimationFrame(tick); })();`
		stop := `(() => { window.recording_++; return window.frames_; })()`
		// The floor: frames of the same page with nothing arriving.
		idleCPU := cpuOf(descendants(os.Getpid()))
		must(b, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](record)))
		time.Sleep(time.Second)
		idle := eval[[]float64](b, ctx, stop)
		idleCPU = cpuOf(descendants(os.Getpid())) - idleCPU
		slices.Sort(idle)
		must(b, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](record)))
		start := time.Now()
		browserCPU, daemonCPU := cpuOf(descendants(os.Getpid())), cpuOf([]int{e.daemonPID(b)})
		sent, sendTime := snd.paced(b, rate, rate*secs)
		want := before + float64(sent)
		waitJS(b, ctx, fmt.Sprintf(`window.parley.feed.length >= %v`, min(want, 20000)), 30*time.Second)
		lag := time.Since(start) - sendTime
		browserCPU, daemonCPU = cpuOf(descendants(os.Getpid()))-browserCPU, cpuOf([]int{e.daemonPID(b)})-daemonCPU
		frames := eval[[]float64](b, ctx, stop)
		slices.Sort(frames)
		b.ReportMetric(float64(sent)/sendTime.Seconds(), "msgs/s-sent")
		b.ReportMetric(float64(lag.Milliseconds()), "ms-caught-up-after")
		b.ReportMetric(frames[len(frames)/2], "ms/frame-p50")
		b.ReportMetric(frames[len(frames)*99/100], "ms/frame-p99")
		b.ReportMetric(frames[len(frames)-1], "ms/frame-max")
		b.ReportMetric(idle[len(idle)/2], "ms/idle-frame-p50")
		b.ReportMetric(idle[len(idle)*99/100], "ms/idle-frame-p99")
		b.ReportMetric(float64(len(frames))/time.Since(start).Seconds(), "frames/s")
		b.ReportMetric(eval[float64](b, ctx, `document.querySelectorAll("#feed .msg").length`), "feed-rows-in-DOM")
		// CPU time per 1,000 messages depends less on the machine's load
		// than the wall-clock figures do.
		b.ReportMetric(float64(browserCPU.Milliseconds())*1000/float64(sent), "cpu-ms/1k-msgs-browser")
		b.ReportMetric(float64(daemonCPU.Milliseconds())*1000/float64(sent), "cpu-ms/1k-msgs-daemon")
		b.ReportMetric(float64(idleCPU.Milliseconds()), "cpu-ms/s-idle-browser")
		b.ReportMetric(load, "load1-before")
		b.ReportMetric(loadAvg(), "load1-after")
	}
	b.ReportMetric(0, "ns/op")
}

func (e *env) daemonPID(b *testing.B) int {
	raw, err := os.ReadFile(filepath.Join(e.home, "parley.pid"))
	if err != nil {
		b.Fatal(err)
	}
	var f struct{ PID int }
	if err := json.Unmarshal(raw, &f); err != nil || f.PID == 0 {
		b.Fatalf("parley.pid %s: %v", raw, err)
	}
	return f.PID
}

// descendants are the processes started under pid (the browser's), pid
// excluded.
func descendants(pid int) []int {
	parent := map[int]int{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		p, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if st := procStat(p); len(st) > 1 {
			parent[p], _ = strconv.Atoi(st[1])
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// procStat is /proc/PID/stat after the command name: state, ppid, ...
func procStat(pid int) []string {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(raw[i+1:]))
}

// cpuOf is the user and system time the processes have used (clock ticks
// of 10 ms on Linux).
func cpuOf(pids []int) time.Duration {
	var ticks int64
	for _, p := range pids {
		st := procStat(p)
		if len(st) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(st[11], 10, 64)
		s, _ := strconv.ParseInt(st[12], 10, 64)
		ticks += u + s
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// sender sends messages over the daemon's socket as cheaply as the test
// can, so that on two shared cores the load reaches the page: request
// bodies made before the clock starts, keep-alive connections enough for
// every send in flight, and no goroutine per message.
type sender struct {
	hc     *http.Client
	bodies [][]byte
}

// inFlight bounds the sends under way at once: the rate must not depend on
// the daemon's latency while it shares the cores with the browser (the
// store commits concurrent sends together).
const inFlight = 64

func newSender(b testing.TB, e *env) *sender {
	paths, err := home.Resolve(e.home)
	if err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", paths.Socket)
		},
		MaxIdleConnsPerHost: inFlight,
	}
	b.Cleanup(tr.CloseIdleConnections)
	return &sender{hc: &http.Client{Transport: tr}}
}

// paced sends n messages at rate a second, on a schedule that does not wait
// for answers (an open loop, up to inFlight at once), and returns how many
// were sent and how long until the last was answered.
func (s *sender) paced(b testing.TB, rate, n int) (int, time.Duration) {
	if len(s.bodies) < n {
		s.bodies = make([][]byte, n)
	}
	for i := range n {
		s.bodies[i], _ = json.Marshal(api.SendRequest{To: fmt.Sprintf("agent-%03d", (i+1)%50), Content: fmt.Sprintf("burst %d", i)})
	}
	next := make(chan int, inFlight)
	var sent atomic.Int64
	var wg sync.WaitGroup
	for range inFlight {
		wg.Go(func() {
			for i := range next {
				if err := s.send(fmt.Sprintf("agent-%03d", i%50), s.bodies[i]); err != nil {
					b.Error(err)
					continue
				}
				sent.Add(1)
			}
		})
	}
	start := time.Now()
	// Release the sends that are due, a millisecond's worth at a time.
	for i := 0; i < n; {
		due := int(time.Since(start) * time.Duration(rate) / time.Second)
		for ; i < n && i <= due; i++ {
			next <- i
		}
		time.Sleep(time.Second / time.Duration(rate))
	}
	close(next)
	wg.Wait()
	return int(sent.Load()), time.Since(start)
}

func (s *sender) send(from string, body []byte) error {
	req, err := http.NewRequest("POST", "http://parley"+api.Prefix+"/messages", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(api.HeaderWorkspace, ws)
	req.Header.Set(api.HeaderAgent, from)
	resp, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("send: %s", resp.Status)
	}
	return nil
}

// loadAvg is the machine's one-minute load average, reported beside every
// figure: the benchmarks share two cores with whatever else runs.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
