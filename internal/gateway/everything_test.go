package gateway_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/config"
	"github.com/parley-dev/parley/internal/gateway"
)

// everything is the npm package @modelcontextprotocol/server-everything that
// scripts/test-deps installs under test/npm: a real, independent upstream. It
// fails the test under CI when missing, and skips it elsewhere.
func everything(t *testing.T) config.Upstream {
	t.Helper()
	script, err := filepath.Abs("../../test/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	node, nodeErr := exec.LookPath("node")
	_, scriptErr := os.Stat(script)
	if nodeErr != nil || scriptErr != nil {
		msg := "server-everything is not installed (run scripts/test-deps): "
		if nodeErr != nil {
			msg += nodeErr.Error()
		} else {
			msg += scriptErr.Error()
		}
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return config.Upstream{Name: "everything", Command: node, Args: []string{script, "stdio"}}
}

func TestServerEverything(t *testing.T) {
	f := newFixture(t, nil, everything(t))
	st := waitState(t, f.m, "everything", gateway.StateReady)
	if !strings.Contains(st.Server, "everything") {
		t.Errorf("got server %q, want the everything server's name", st.Server)
	}
	var mu sync.Mutex
	var progress []float64
	cs := f.connect(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		if req.Params.ProgressToken == "tok-1" {
			progress = append(progress, req.Params.Progress)
		}
	}})
	names := toolNames(t, cs)
	for _, want := range []string{"everything__echo", "everything__get-structured-content", "everything__get-tiny-image", "everything__trigger-long-running-operation"} {
		if !slices.Contains(names, want) {
			t.Errorf("got tools %v, want %s among them", names, want)
		}
	}

	tests := []struct {
		name  string
		tool  string
		args  map[string]any
		check func(t *testing.T, res *mcp.CallToolResult)
	}{
		{"echo", "everything__echo", map[string]any{"message": "hi there"}, func(t *testing.T, res *mcp.CallToolResult) {
			if got := text(res); got != "Echo: hi there" {
				t.Errorf("got %q, want Echo: hi there", got)
			}
		}},
		{"structured", "everything__get-structured-content", map[string]any{"location": "Chicago"}, func(t *testing.T, res *mcp.CallToolResult) {
			var w struct {
				Temperature float64 `json:"temperature"`
				Conditions  string  `json:"conditions"`
			}
			structured(t, res, &w)
			if w.Temperature != 36 || w.Conditions != "Light rain / drizzle" {
				t.Errorf("got structured %+v, want Chicago's 36 and light rain", w)
			}
		}},
		{"image", "everything__get-tiny-image", nil, func(t *testing.T, res *mcp.CallToolResult) {
			var img *mcp.ImageContent
			for _, c := range res.Content {
				if ic, ok := c.(*mcp.ImageContent); ok {
					img = ic
				}
			}
			if img == nil || img.MIMEType != "image/png" || len(img.Data) < 100 || string(img.Data[1:4]) != "PNG" {
				t.Errorf("got contents %v, want a PNG image", res.Content)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := callTool(t, cs, tc.tool, tc.args)
			if res.IsError {
				t.Fatalf("tool error: %s", text(res))
			}
			tc.check(t, res)
		})
	}

	t.Run("progress", func(t *testing.T) {
		params := &mcp.CallToolParams{Name: "everything__trigger-long-running-operation", Arguments: map[string]any{"duration": 1, "steps": 4}}
		params.SetProgressToken("tok-1")
		res, err := cs.CallTool(context.Background(), params)
		if err != nil || res.IsError {
			t.Fatalf("got %v, %v", res, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(progress) < 3 || progress[0] != 1 || progress[1] != 2 || progress[2] != 3 {
			t.Errorf("got progress %v under the caller's token, want 1, 2, 3 (and maybe 4)", progress)
		}
	})
}
