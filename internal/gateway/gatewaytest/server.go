// Package gatewaytest is an upstream MCP server for the gateway's tests: a
// go-sdk server with tools that echo, return structured and image content,
// report progress, honour cancellation, log, crash, and change the tool list.
// testdata/upstream serves it over stdio or Streamable HTTP; tests may also
// serve it in process. Only tests import it.
package gatewaytest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// PNG is a 1x1 PNG that the image tool returns.
var PNG = []byte{
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
	0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
	0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
	0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
}

// Options configure the test server.
type Options struct {
	// MarkDir, if set, receives a file per event that tests check from
	// outside: "cancelled-ID" when a slow call saw its cancellation,
	// "call-N" for every tools/call of count.
	MarkDir string
}

type (
	EchoIn struct {
		Text string `json:"text"`
	}
	WeatherIn struct {
		City string `json:"city"`
	}
	WeatherOut struct {
		City        string  `json:"city"`
		Temperature float64 `json:"temperature"`
		Conditions  string  `json:"conditions"`
	}
	SlowIn struct {
		Steps int    `json:"steps"`
		MS    int    `json:"ms"`
		ID    string `json:"id,omitempty"`
	}
	NameIn struct {
		Name string `json:"name"`
	}
	LogIn struct {
		Level string `json:"level"`
		Text  string `json:"text"`
	}
	PIDOut struct {
		PID   int   `json:"pid"`
		Calls int64 `json:"calls"`
	}
	Empty struct{}
)

// NewServer returns the test server.
func NewServer(opts *Options) *mcp.Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	mark := func(name string) {
		if o.MarkDir != "" {
			os.WriteFile(filepath.Join(o.MarkDir, name), nil, 0o600)
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "gatewaytest", Version: "1.0.0"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	var calls atomic.Int64
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echoes text back."},
		func(ctx context.Context, req *mcp.CallToolRequest, in EchoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "weather", Description: "Structured weather for a city."},
		func(ctx context.Context, req *mcp.CallToolRequest, in WeatherIn) (*mcp.CallToolResult, WeatherOut, error) {
			return nil, WeatherOut{City: in.City, Temperature: 21.5, Conditions: "sunny"}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "image", Description: "A tiny PNG."},
		func(ctx context.Context, req *mcp.CallToolRequest, in Empty) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "an image:"},
				&mcp.ImageContent{Data: PNG, MIMEType: "image/png"},
			}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "fail", Description: "Always a tool error."},
		func(ctx context.Context, req *mcp.CallToolRequest, in Empty) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it failed, on purpose"}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "protocol_error", Description: "Always a JSON-RPC error."},
		func(ctx context.Context, req *mcp.CallToolRequest, in Empty) (*mcp.CallToolResult, any, error) {
			return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no good, on purpose"}
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow", Description: "Sleeps steps*ms, reporting progress; honours cancellation."},
		func(ctx context.Context, req *mcp.CallToolRequest, in SlowIn) (*mcp.CallToolResult, any, error) {
			tok := req.Params.GetProgressToken()
			for i := 1; i <= in.Steps; i++ {
				select {
				case <-ctx.Done():
					mark("cancelled-" + in.ID)
					return nil, nil, ctx.Err()
				case <-time.After(time.Duration(in.MS) * time.Millisecond):
				}
				if tok != nil {
					req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(in.Steps), Message: fmt.Sprintf("step %d", i)})
				}
			}
			mark("finished-" + in.ID)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("done after %d steps", in.Steps)}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "pid", Description: "The server's pid and how many calls of pid it served."},
		func(ctx context.Context, req *mcp.CallToolRequest, in Empty) (*mcp.CallToolResult, PIDOut, error) {
			n := calls.Add(1)
			mark(fmt.Sprintf("call-%d-%d", os.Getpid(), n))
			return nil, PIDOut{PID: os.Getpid(), Calls: n}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "crash", Description: "Exits the process in the middle of the call."},
		func(ctx context.Context, req *mcp.CallToolRequest, in Empty) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "gatewaytest: crashing on purpose")
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "log", Description: "Sends a log message, then answers."},
		func(ctx context.Context, req *mcp.CallToolRequest, in LogIn) (*mcp.CallToolResult, any, error) {
			req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(in.Level), Logger: "test", Data: in.Text})
			// Give the notification time to travel before the response
			// ends the call it belongs to.
			time.Sleep(100 * time.Millisecond)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "logged"}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "add_tool", Description: "Adds a tool named name that answers its name."},
		func(ctx context.Context, req *mcp.CallToolRequest, in NameIn) (*mcp.CallToolResult, any, error) {
			name := in.Name
			mcp.AddTool(srv, &mcp.Tool{Name: name, Description: "Added at run time."},
				func(ctx context.Context, req *mcp.CallToolRequest, in Empty) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "I am " + name}}}, nil, nil
				})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added " + name}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "remove_tool", Description: "Removes the tool named name."},
		func(ctx context.Context, req *mcp.CallToolRequest, in NameIn) (*mcp.CallToolResult, any, error) {
			srv.RemoveTools(in.Name)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "removed " + in.Name}}}, nil, nil
		})
	return srv
}
