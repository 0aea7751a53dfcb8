package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// reportLatencies reports percentiles of ds in milliseconds.
func reportLatencies(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	pct := func(p float64) float64 {
		i := int(float64(len(ds)-1) * p)
		return float64(ds[i].Nanoseconds()) / 1e6
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(pct(0.999), "p999-ms")
}

// BenchmarkSendWake measures send->wake latency as an agent sees it: agent B is
// blocked in wait_for_message through its own `parley mcp serve`; agent A sends
// through its own; the clock runs from A's call until B's wait returns.
func BenchmarkSendWake(b *testing.B) {
	e := newEnv(b)
	a := e.Session(nil, "--workspace", "bench", "--agent", "a")
	w := e.Session(nil, "--workspace", "bench", "--agent", "b")
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got := make(chan time.Time, 1)
		go func() {
			res, err := w.CallTool(ctx, &mcp.CallToolParams{Name: "wait_for_message", Arguments: map[string]any{"timeout": 30}})
			if err != nil || res.IsError {
				b.Error("wait failed", err)
			}
			got <- time.Now()
		}()
		// Let B's wait reach the daemon and block; the hub never loses a
		// wake-up either way, but the benchmark is about the blocked path.
		time.Sleep(300 * time.Microsecond)
		start := time.Now()
		if _, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"to": "b", "content": "ping"}}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-got).Sub(start))
	}
	b.StopTimer()
	reportLatencies(b, lat)
}

// BenchmarkSendThroughput8 sends from 8 concurrent MCP sessions straight to
// /mcp on the socket (Streamable HTTP, no bridge) and reports messages/s.
func BenchmarkSendThroughput8(b *testing.B) {
	const senders = 8
	e := newEnv(b)
	e.Must("daemon", "start")
	sock := filepath.Join(e.home, "parley.sock")
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		MaxIdleConnsPerHost: 64,
	}}
	var sessions []*mcp.ClientSession
	for i := 0; i < senders; i++ {
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		s, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint:   "http://parley/mcp?workspace=bench&agent=s" + strconv.Itoa(i),
			HTTPClient: hc,
		}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		sessions = append(sessions, s)
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	per := (b.N + senders - 1) / senders
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < per; j++ {
				res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "send_message",
					Arguments: map[string]any{"to": "sink", "content": fmt.Sprintf("m %d %d", i, j)}})
				if err != nil || res.IsError {
					b.Error("send failed", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(per*senders)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkColdStart measures `parley mcp serve` from spawn to the initialize
// result, with the daemon already running.
func BenchmarkColdStart(b *testing.B) {
	e := newEnv(b)
	e.Must("daemon", "start")
	lat := make([]time.Duration, 0, b.N)
	init := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := e.Cmd("mcp", "serve", "--workspace", "bench", "--agent", "cold")
		stdin, _ := c.StdinPipe()
		stdout, _ := c.StdoutPipe()
		start := time.Now()
		if err := c.Start(); err != nil {
			b.Fatal(err)
		}
		stdin.Write(init)
		var resp struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.NewDecoder(stdout).Decode(&resp); err != nil || resp.Result == nil {
			b.Fatalf("initialize: %v", err)
		}
		lat = append(lat, time.Since(start))
		stdin.Close()
		c.Wait()
	}
	b.StopTimer()
	reportLatencies(b, lat)
}
