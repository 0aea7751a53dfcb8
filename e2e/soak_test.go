package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// soakDuration is PARLEY_SOAK (a Go duration; scripts/soak sets 10m), else 20s
// (the suite's check that the soak's traffic runs clean and flat; the long
// run finds slow leaks), or 10s with -short.
func soakDuration(t *testing.T) time.Duration {
	if v := os.Getenv("PARLEY_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("PARLEY_SOAK=%q: %v", v, err)
		}
		return d
	}
	if testing.Short() {
		return 10 * time.Second
	}
	return 20 * time.Second
}

// daemonGauges reads the daemon's goroutine count and RSS.
func (e *env) daemonGauges() (goroutines int, rssBytes int64) {
	e.t.Helper()
	var st struct {
		PID        int `json:"pid"`
		Goroutines int `json:"goroutines"`
	}
	e.mustAPI("GET", "/status", "default", "", nil, &st)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", st.PID))
	if err != nil {
		e.t.Fatalf("read daemon status: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			rssBytes = kb << 10
		}
	}
	return st.Goroutines, rssBytes
}

// TestSoak: 200 agents, each with its own MCP session on the socket, send to
// random others and read their inboxes for PARLEY_SOAK (default 60s). No
// message is lost or duplicated; the daemon's goroutines and RSS are flat from
// the end of the warm-up to the end; send and delivery p99 are reported.
func TestSoak(t *testing.T) {
	const agents = 200
	dur := soakDuration(t)
	e := newEnv(t)
	e.Must("daemon", "start")
	const ws = "soak"
	sock := filepath.Join(e.home, "parley.sock")
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		MaxIdleConnsPerHost: 2 * agents,
	}}
	names := make([]string, agents)
	sessions := make([]*mcp.ClientSession, agents)
	for i := range sessions {
		names[i] = fmt.Sprintf("ag%03d", i)
		c := mcp.NewClient(&mcp.Implementation{Name: "soak", Version: "1"}, nil)
		q := url.Values{"workspace": {ws}, "agent": {names[i]}}
		s, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://parley/mcp?" + q.Encode(), HTTPClient: hc},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("connect %s: %v", names[i], err)
		}
		sessions[i] = s
		defer s.Close()
	}
	repeats := soak(t, e, names, sessions, dur, hc.CloseIdleConnections)
	t.Logf("%d repeats among the HTTP clients, marked redelivered", repeats)
}

// TestSoakBridges is TestSoak's traffic from agents behind `parley mcp
// serve`, each cancelling its call's context as soon as the call returns:
// the bridge confirms what it wrote to its client, so every message reaches
// its recipient exactly once.
func TestSoakBridges(t *testing.T) {
	const agents = 40
	dur := soakDuration(t) / 4
	e := newEnv(t)
	e.Must("daemon", "start")
	names := make([]string, agents)
	sessions := make([]*mcp.ClientSession, agents)
	for i := range sessions {
		names[i] = fmt.Sprintf("ag%03d", i)
		sessions[i] = e.Session(nil, "--workspace", "soak", "--agent", names[i])
	}
	if repeats := soak(t, e, names, sessions, dur, func() {}); repeats != 0 {
		t.Errorf("bridge clients got %d messages twice, want none: nothing ended unconfirmed", repeats)
	}
}

// soak runs the soak's traffic over sessions (of the agents names) for dur
// and checks that each acknowledged message reached its recipient, and only
// it, at least once, marked when again; that the daemon's goroutines and RSS
// stay flat after the warm-up (idle drops the client's idle connections
// first). It returns how many copies came again.
func soak(t *testing.T, e *env, names []string, sessions []*mcp.ClientSession, dur time.Duration, idle func()) int {
	t.Helper()
	agents := len(sessions)
	type inboxMsg struct {
		ID          string `json:"message_id"`
		From        string `json:"from"`
		Content     string `json:"content"`
		Redelivered bool   `json:"redelivered"`
	}
	var (
		mu       sync.Mutex
		sent     = map[string]string{} // id -> recipient
		received = map[string][]string{}
		sendLat  []time.Duration
		delivLat []time.Duration
		gate     sync.RWMutex // write-locked to pause every agent for a quiet measurement
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	receive := func(me string, msgs []inboxMsg) {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			if len(received[m.ID]) > 0 && !m.Redelivered {
				t.Errorf("message %s came to %s again, not marked redelivered", m.ID, me)
			}
			received[m.ID] = append(received[m.ID], me)
			if _, ns, ok := strings.Cut(m.Content, "@"); ok {
				if n, err := strconv.ParseInt(ns, 10, 64); err == nil {
					delivLat = append(delivLat, now.Sub(time.Unix(0, n)))
				}
			}
		}
	}
	check := func(s *mcp.ClientSession) ([]inboxMsg, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "check_messages", Arguments: map[string]any{"limit": 100}})
		if err != nil || res.IsError {
			return nil, fmt.Errorf("check_messages: %v %v", err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var c struct {
			Messages []inboxMsg `json:"messages"`
		}
		return c.Messages, json.Unmarshal(b, &c)
	}
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				case <-time.After(time.Duration(150+rng.IntN(100)) * time.Millisecond):
				}
				gate.RLock()
				to := names[(i+1+rng.IntN(agents-1))%agents]
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				start := time.Now()
				res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "send_message",
					Arguments: map[string]any{"to": to, "content": fmt.Sprintf("%s %d @%d", names[i], n, start.UnixNano())}})
				cancel()
				if err != nil || res.IsError {
					gate.RUnlock()
					t.Errorf("%s send: %v %v", names[i], err, res)
					return
				}
				el := time.Since(start)
				var r struct {
					ID string `json:"message_id"`
				}
				b, _ := json.Marshal(res.StructuredContent)
				json.Unmarshal(b, &r)
				mu.Lock()
				sent[r.ID] = to
				sendLat = append(sendLat, el)
				mu.Unlock()
				msgs, err := check(s)
				gate.RUnlock()
				if err != nil {
					t.Errorf("%s: %v", names[i], err)
					return
				}
				receive(names[i], msgs)
			}
		}()
	}

	// Quiet measurements: pause every agent, let in-flight work settle.
	quiet := func() (int, int64) {
		gate.Lock()
		defer gate.Unlock()
		// Idle keep-alive connections come and go with the load; each holds
		// a goroutine in the daemon. Close them so only sessions remain.
		idle()
		time.Sleep(300 * time.Millisecond)
		return e.daemonGauges()
	}
	warm := min(dur/3, 20*time.Second)
	time.Sleep(warm)
	g0, r0 := quiet()
	samples := []string{fmt.Sprintf("warm %d goroutines %.1f MB", g0, float64(r0)/(1<<20))}
	end := time.Now().Add(dur - warm)
	gMax, rMax := g0, r0
	for time.Now().Before(end) && !t.Failed() {
		time.Sleep(min(time.Until(end), max(dur/10, 2*time.Second)))
		g, r := quiet()
		gMax, rMax = max(gMax, g), max(rMax, r)
		samples = append(samples, fmt.Sprintf("%d/%.1fMB", g, float64(r)/(1<<20)))
	}
	close(stop)
	wg.Wait()
	if t.Failed() {
		return 0
	}
	g1, r1 := e.daemonGauges()
	t.Logf("daemon goroutines/RSS: %s; after %d", strings.Join(samples, ", "), g1)

	// Drain every inbox; then each acknowledged message reached its recipient once.
	for i, s := range sessions {
		for {
			msgs, err := check(s)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) == 0 {
				break
			}
			receive(names[i], msgs)
		}
	}
	// Delivery is at least once, and a repeat is marked (checked in
	// receive). Only the recipient may have it, and at least once; the
	// callers judge the repeats.
	repeats := 0
	for id, to := range sent {
		got := received[id]
		if len(got) == 0 {
			t.Errorf("message %s to %s: never received", id, to)
		}
		for _, by := range got {
			if by != to {
				t.Errorf("message %s to %s: received by %v", id, to, got)
				break
			}
		}
		repeats += max(len(got)-1, 0)
	}
	for id, by := range received {
		if _, ok := sent[id]; !ok {
			t.Errorf("message %s received by %v was never acknowledged as sent", id, by)
		}
	}
	// Flat: no growth past noise once warm. Goroutines are counted with every
	// agent paused and its session still open.
	if gMax > g0+20 {
		t.Errorf("daemon goroutines grew after warm-up: %d at warm-up, up to %d later", g0, gMax)
	}
	if rMax > r0+r0/2+16<<20 {
		t.Errorf("daemon RSS grew after warm-up: %.1f MB at warm-up, up to %.1f MB later", float64(r0)/(1<<20), float64(rMax)/(1<<20))
	}
	pct := func(ds []time.Duration, p float64) time.Duration {
		slices.Sort(ds)
		return ds[int(float64(len(ds)-1)*p)]
	}
	t.Logf("%d agents, %s: %d messages sent, each delivered to its recipient (%d repeats); send p50 %s p99 %s; send->read p50 %s p99 %s; final RSS %.1f MB",
		agents, dur, len(sent), repeats, pct(sendLat, 0.5), pct(sendLat, 0.99), pct(delivLat, 0.5), pct(delivLat, 0.99), float64(r1)/(1<<20))
	return repeats
}
