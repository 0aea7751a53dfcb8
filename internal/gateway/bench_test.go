package gateway_test

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/gateway"
)

// BenchmarkProxyOverhead isolates the gateway's own cost: a client on an
// in-memory transport calls through the Manager to a stdio upstream, against
// the same call made straight to another process of that upstream, the two
// interleaved. (e2e's BenchmarkGatewayCall measures the daemon's whole path.)
func BenchmarkProxyOverhead(b *testing.B) {
	f := newFixture(b, nil, stdio("up", ""))
	waitState(b, f.m, "up", gateway.StateReady)
	m := f.connect(nil)
	ctx := context.Background()
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "direct"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: exec.Command(upstreamBin)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	timed := func(cs *mcp.ClientSession, name string) time.Duration {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "ping"}})
		d := time.Since(start)
		if err != nil || res.IsError {
			b.Fatalf("call %s: %v %v", name, res, err)
		}
		return d
	}
	for range 50 {
		timed(direct, "echo")
		timed(m, "up__echo")
	}
	dd := make([]time.Duration, 0, b.N)
	pd := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		dd = append(dd, timed(direct, "echo"))
		pd = append(pd, timed(m, "up__echo"))
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
