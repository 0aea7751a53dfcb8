package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/ops"
	"github.com/parley-dev/parley/internal/store/sqlite"
)

// directServerEnv makes this test binary, re-executed, a plain go-sdk stdio
// MCP server: the baseline of BenchmarkToolCallBridge.
const directServerEnv = "PARLEY_E2E_DIRECT_STDIO_SERVER"

func init() {
	if dir := os.Getenv(directServerEnv); dir != "" {
		if err := runDirectServer(dir); err != nil {
			fmt.Fprintln(os.Stderr, "direct server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// runDirectServer serves check_messages over stdio with the same hub and
// SQLite store the daemon uses, so that the two paths do the same work and
// differ only in transport.
func runDirectServer(dir string) error {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "direct.db"), nil)
	if err != nil {
		return err
	}
	defer db.Close()
	h := hub.New(db, nil)
	if _, err := h.Join(ctx, hub.JoinRequest{Workspace: "bench", Name: "a"}); err != nil {
		return err
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "direct", Version: "1"}, nil)
	type checkIn struct {
		Limit int `json:"limit,omitempty"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "check_messages"}, func(ctx context.Context, _ *mcp.CallToolRequest, in checkIn) (*mcp.CallToolResult, api.CheckResult, error) {
		msgs, remaining, err := h.Check(ctx, "bench", "a", in.Limit)
		if err != nil {
			return nil, api.CheckResult{}, err
		}
		return nil, api.CheckResult{Status: "empty", Messages: ops.Messages(msgs), Remaining: remaining}, nil
	})
	return srv.Run(ctx, &mcp.StdioTransport{})
}

// BenchmarkToolCallBridge compares a tools/call round trip (check_messages on
// an empty inbox) through `parley mcp serve` -> Unix socket -> daemon with the
// same call to a go-sdk stdio server that does the same work in-process,
// alternating the two in one run. It reports both p50s and their ratio.
func BenchmarkToolCallBridge(b *testing.B) {
	e := newEnv(b)
	e.Must("daemon", "start")
	bridged := e.Session(nil, "--workspace", "bench", "--agent", "a")

	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), directServerEnv+"="+b.TempDir())
	ctx := context.Background()
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()

	call := func(s *mcp.ClientSession) time.Duration {
		start := time.Now()
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "check_messages", Arguments: map[string]any{}})
		d := time.Since(start)
		if err != nil || res.IsError {
			b.Fatalf("check_messages: %v %v", err, res)
		}
		return d
	}
	for range 20 { // warm up both paths
		call(bridged)
		call(direct)
	}
	viaBridge := make([]time.Duration, 0, b.N)
	viaDirect := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		viaBridge = append(viaBridge, call(bridged))
		viaDirect = append(viaDirect, call(direct))
	}
	b.StopTimer()
	p50 := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Nanoseconds()) / 1e3
	}
	p99 := func(ds []time.Duration) float64 {
		return float64(ds[(len(ds)-1)*99/100].Nanoseconds()) / 1e3
	}
	bp50, dp50 := p50(viaBridge), p50(viaDirect)
	b.ReportMetric(bp50, "bridge-p50-us")
	b.ReportMetric(p99(viaBridge), "bridge-p99-us")
	b.ReportMetric(dp50, "direct-p50-us")
	b.ReportMetric(p99(viaDirect), "direct-p99-us")
	b.ReportMetric(bp50/dp50, "p50-ratio")
}
