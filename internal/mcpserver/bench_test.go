package mcpserver_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/mcpserver"
	"github.com/parley-dev/parley/internal/ops"
	"github.com/parley-dev/parley/internal/store/sqlite"
)

// BenchmarkToolCallInProcess measures one tools/call through the real /mcp
// handler on a Unix socket, with a go-sdk client and a SQLite store: the
// daemon side of every agent call, without the stdio bridges. TOOL=send_message
// measures a durable send instead of whoami. Its floor, in the same run, is
// a bare go-sdk server whose tool of the same name does nothing, served the
// same way to the same client (PARLEY_SDK_WORKAROUNDS turns Parley's
// workarounds of SDK costs off one by one: docs/performance.md).
func BenchmarkToolCallInProcess(b *testing.B) {
	tool := os.Getenv("TOOL")
	if tool == "" {
		tool = "whoami"
	}
	args := map[string]any{}
	if tool == "send_message" {
		args = map[string]any{"to": "sink", "content": "hello"}
	}
	b.Run("parley", func(b *testing.B) {
		dir, _ := os.MkdirTemp("/tmp", "pm")
		defer os.RemoveAll(dir)
		db, err := sqlite.Open(context.Background(), filepath.Join(dir, "p.db"), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		h := hub.New(db, nil)
		calls(b, mcpserver.New(ops.New(h, nil), nil), tool, args)
	})
	b.Run("bare-sdk", func(b *testing.B) {
		srv := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
		type in struct {
			To      string `json:"to,omitempty"`
			Content string `json:"content,omitempty"`
		}
		type out struct {
			Status string `json:"status"`
		}
		mcp.AddTool(srv, &mcp.Tool{Name: tool}, func(context.Context, *mcp.CallToolRequest, in) (*mcp.CallToolResult, out, error) {
			return nil, out{Status: "ok"}, nil
		})
		calls(b, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil), tool, args)
	})
}

// calls serves handler on a Unix socket and measures tools/call of tool on
// it: wall time, the process's CPU and allocations per call.
func calls(b *testing.B, handler http.Handler, tool string, args map[string]any) {
	dir, _ := os.MkdirTemp("/tmp", "pc")
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: handler}
	go hs.Serve(ln)
	defer hs.Close()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return net.Dial("unix", sock)
	}}}
	c := mcp.NewClient(&mcp.Implementation{Name: "b", Version: "1"}, nil)
	s, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://x/mcp?agent=a&workspace=w", HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		if res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args}); err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// BenchmarkBuildProfiles measures building every profile the server has,
// as the first session of each does: inferring and resolving the schemas of
// their tools. Run it as -benchtime 1x in a fresh process to see a daemon's
// first build (the schema cache is the process's).
func BenchmarkBuildProfiles(b *testing.B) {
	db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "p.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	o := ops.New(hub.New(db, nil), nil)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		srv := mcpserver.New(o, nil)
		for _, p := range srv.Profiles() {
			ct, st := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(context.Background(), st, ops.Caller{Agent: "a", Profiles: []string{p}})
			if err != nil {
				b.Fatal(p, err)
			}
			_ = ct
			ss.Close()
		}
	}
}
