// Package profile runs the daemon in-process under the same load as
// bench/cmd/parley-bench, so that `go test -cpuprofile` shows where a
// scenario's time goes (the daemon itself exposes no profiling endpoint):
//
//	go test ./bench/profile -run '^$' -bench Send64 -benchtime 20000x -cpuprofile /tmp/cpu.out
//	go tool pprof -top -cum /tmp/cpu.out
//
// The client side (go-sdk) runs in the same process and shows in the profile
// too; focus on the daemon with -focus 'daemon|mcpserver|hub|sqlite'.
package profile

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/daemon"
)

// startDaemon runs a daemon in a temporary state directory until the test ends.
func startDaemon(b *testing.B) (*daemon.Daemon, *http.Client) {
	b.Helper()
	home, err := os.MkdirTemp("/tmp", "pp")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d, err := daemon.Open(ctx, daemon.Config{Home: home, Version: "profile"})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	b.Cleanup(func() {
		cancel()
		<-done
		d.Close()
		os.RemoveAll(home)
	})
	sock := filepath.Join(home, "parley.sock")
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var nd net.Dialer
			return nd.DialContext(ctx, "unix", sock)
		},
		MaxIdleConnsPerHost: 1024,
	}}
	return d, hc
}

func session(b *testing.B, hc *http.Client, ws, agent string) *mcp.ClientSession {
	b.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "profile", Version: "1"}, nil)
	q := url.Values{"workspace": {ws}, "agent": {agent}}
	s, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://parley/mcp?" + q.Encode(), HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func benchSend(b *testing.B, senders int) {
	_, hc := startDaemon(b)
	ss := make([]*mcp.ClientSession, senders)
	for i := range ss {
		ss[i] = session(b, hc, "p", "s"+strconv.Itoa(i))
	}
	b.ResetTimer()
	start, cpu0 := time.Now(), processCPU()
	per := (b.N + senders - 1) / senders
	var wg sync.WaitGroup
	for i, s := range ss {
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
	cpuPer(b, cpu0, per*senders)
}

// BenchmarkSend1 and BenchmarkSend64: durable sends from 1 and 64 MCP sessions.
func BenchmarkSend1(b *testing.B)  { benchSend(b, 1) }
func BenchmarkSend64(b *testing.B) { benchSend(b, 64) }

// BenchmarkSendWake: B blocked in wait_for_message, A sends.
func BenchmarkSendWake(b *testing.B) {
	_, hc := startDaemon(b)
	a := session(b, hc, "w", "a")
	w := session(b, hc, "w", "b")
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		done := make(chan error, 1)
		go func() {
			_, err := w.CallTool(ctx, &mcp.CallToolParams{Name: "wait_for_message", Arguments: map[string]any{"timeout": 30}})
			done <- err
		}()
		time.Sleep(500 * time.Microsecond)
		if _, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"to": "b", "content": "ping"}}); err != nil {
			b.Fatal(err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAPISend64: durable sends from 64 goroutines through POST /api/v1/messages.
func BenchmarkAPISend64(b *testing.B) {
	const senders = 64
	_, hc := startDaemon(b)
	b.ResetTimer()
	start, cpu0 := time.Now(), processCPU()
	per := (b.N + senders - 1) / senders
	var wg sync.WaitGroup
	for i := 0; i < senders; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < per; j++ {
				req, _ := http.NewRequest("POST", "http://parley/api/v1/messages",
					strings.NewReader(fmt.Sprintf(`{"to":"sink","content":"m %d %d"}`, i, j)))
				req.Header.Set("Parley-Workspace", "p")
				req.Header.Set("Parley-Agent", "s"+strconv.Itoa(i))
				resp, err := hc.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Error("status", resp.Status)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(per*senders)/time.Since(start).Seconds(), "msgs/s")
	cpuPer(b, cpu0, per*senders)
}
