package e2e

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkGatewayCall compares a tools/call proxied by the daemon's gateway
// (go-sdk client -> Streamable HTTP on the socket -> daemon -> stdio upstream)
// with the same call made directly (go-sdk client -> stdio upstream), the two
// interleaved in one run. It reports each p50 and the overhead.
func BenchmarkGatewayCall(b *testing.B) {
	up := upstreamBin(b)
	e := newEnv(b)
	e.Must("upstream", "add", "up", "--", up)
	e.waitUpstream(b, "up", "ready", isReady)
	ctx := context.Background()
	opts := &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}

	direct, err := mcp.NewClient(&mcp.Implementation{Name: "bench-direct"}, nil).Connect(ctx, &mcp.CommandTransport{Command: exec.Command(up)}, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	sock := filepath.Join(e.home, "parley.sock")
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	proxied, err := mcp.NewClient(&mcp.Implementation{Name: "bench-proxied"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://parley/mcp?profile=gateway", HTTPClient: hc}, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer proxied.Close()

	timed := func(cs *mcp.ClientSession, name string) time.Duration {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "ping"}})
		d := time.Since(start)
		if err != nil || res.IsError {
			b.Fatalf("call %s: %v %v", name, res, err)
		}
		return d
	}
	for range 50 { // warm up both paths
		timed(direct, "echo")
		timed(proxied, "up__echo")
	}
	dd := make([]time.Duration, 0, b.N)
	pd := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		dd = append(dd, timed(direct, "echo"))
		pd = append(pd, timed(proxied, "up__echo"))
	}
	b.StopTimer()
	p50 := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Nanoseconds()) / 1e6
	}
	d, p := p50(dd), p50(pd)
	b.ReportMetric(d, "direct-p50-ms")
	b.ReportMetric(p, "proxied-p50-ms")
	b.ReportMetric(p-d, "overhead-p50-ms")
}
