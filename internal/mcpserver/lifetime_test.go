package mcpserver_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/bridge"
	"github.com/parley-dev/parley/internal/hub"
)

// bridgedAs opens a session through the bridge with headers h, as `parley
// mcp serve` does, and lists its tools, as a health check (`claude mcp
// list`) does and nothing more.
func bridgedAs(t *testing.T, sock string, h http.Header) *mcp.ClientSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- bridge.Run(context.Background(), inR, outW, &bridge.Options{SocketPath: sock, Stream: true, Header: h})
		outW.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx,
		&mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		inW.Close()
		<-done
	})
	return cs
}

// TestSessionRegistersWhenReachable: a session named after itself with no
// door (a health check such as `claude mcp list`, whose server has a
// session id but no inbox socket) registers no agent until it makes a
// call; one with a door registers at once, provisional until its first
// call; a given name registers at once, lasting.
func TestSessionRegistersWhenReachable(t *testing.T) {
	e := newEnv(t)
	sock, _ := streamServer(t, e)
	ctx := context.Background()
	const ws = "life"
	derived := func(name, door string) http.Header {
		hello := api.Hello{Agent: name, Workspace: ws, NameFrom: api.NameSession}
		if door != "" {
			hello.ClaudeInbox = &api.DoorRequest{Address: door, Session: "6f1c9a52-0000"}
		}
		return http.Header{api.HeaderHello: {hello.Header()}}
	}
	agent := func(name string) (*hub.Agent, error) { return e.Hub.Agent(ctx, ws, name) }

	check := bridgedAs(t, sock, derived("claude-app-aaaaaa", ""))
	if a, err := agent("claude-app-aaaaaa"); !hub.IsNotFound(err) {
		t.Errorf("a doorless session that only listed its tools: agent %+v %v, want none", a, err)
	}
	whoamiIn(t, check, "")
	if a, err := agent("claude-app-aaaaaa"); err != nil || !a.SessionBound || a.Provisional {
		t.Errorf("after its first call: %+v %v, want session-bound, not provisional", a, err)
	}

	live := bridgedAs(t, sock, derived("claude-app-bbbbbb", "/tmp/cc-socks/1.sock"))
	if a, err := agent("claude-app-bbbbbb"); err != nil || !a.SessionBound || !a.Provisional {
		t.Errorf("a session with a door, before any call: %+v %v, want registered, provisional", a, err)
	}
	whoamiIn(t, live, "")
	if a, err := agent("claude-app-bbbbbb"); err != nil || a.Provisional {
		t.Errorf("after its first call: %+v %v, want not provisional", a, err)
	}

	bridgedAs(t, sock, http.Header{api.HeaderAgent: {"given"}, api.HeaderWorkspace: {ws}})
	if a, err := agent("given"); err != nil || a.SessionBound || a.Provisional {
		t.Errorf("a given name: %+v %v, want registered, lasting", a, err)
	}
}
