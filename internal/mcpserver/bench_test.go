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
// measures a durable send instead of whoami.
func BenchmarkToolCallInProcess(b *testing.B) {
	dir, _ := os.MkdirTemp("/tmp", "pm")
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(context.Background(), filepath.Join(dir, "p.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	h := hub.New(db, nil)
	srv := mcpserver.New(ops.New(h, nil), nil)
	sock := filepath.Join(dir, "s")
	ln, _ := net.Listen("unix", sock)
	hs := &http.Server{Handler: srv}
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
	tool := os.Getenv("TOOL")
	if tool == "" {
		tool = "whoami"
	}
	args := map[string]any{}
	if tool == "send_message" {
		args = map[string]any{"to": "sink", "content": "hello"}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args}); err != nil {
			b.Fatal(err)
		}
	}
}
