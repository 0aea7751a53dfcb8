package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/bridge"
)

// upgradeTCP asks the daemon at addr for a stream session with the headers
// ("K: V") and returns the connection on 101, or the status and body.
func upgradeTCP(t *testing.T, addr string, headers ...string) (net.Conn, *bufio.Reader, int, string) {
	t.Helper()
	h := http.Header{}
	for _, kv := range headers {
		k, v, _ := strings.Cut(kv, ": ")
		h.Set(k, v)
	}
	c, br, err := bridge.DialStream(context.Background(), "tcp", addr, "http://"+addr+"/mcp", h, nil)
	var refused *bridge.RefusedError
	if errors.As(err, &refused) {
		return nil, nil, refused.Status, refused.Body
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, br, http.StatusSwitchingProtocols, ""
}

// TestStreamOverTCP: a stream session over TCP passes the same guard as
// every request: no token, no stream; an agent token streams as its agent
// only.
func TestStreamOverTCP(t *testing.T) {
	e := newEnv(t, "PARLEY_WORKSPACE=team")
	e.Must("daemon", "start", "--listen", "127.0.0.1:0")
	addr := listenAddr(t, e)
	var created struct{ Token string }
	e.MustJSON(&created, "token", "create", "--agent", "alice")

	if _, _, status, body := upgradeTCP(t, addr); status != http.StatusUnauthorized {
		t.Errorf("stream without a token: got %d %s, want 401", status, body)
	}
	if _, _, status, body := upgradeTCP(t, addr, "Authorization: Bearer "+created.Token, "Parley-Agent: bob"); status != http.StatusForbidden || !strings.Contains(body, "alice") {
		t.Errorf("alice's token streaming as bob: got %d %s, want 403 naming alice", status, body)
	}
	c, br, status, body := upgradeTCP(t, addr, "Authorization: Bearer "+created.Token)
	if status != http.StatusSwitchingProtocols {
		t.Fatalf("stream with alice's token: got %d %s, want 101", status, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "tcp", Version: "1"}, nil).Connect(ctx,
		&mcp.IOTransport{Reader: struct {
			io.Reader
			io.Closer
		}{br, c}, Writer: c}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil || res.IsError {
		t.Fatalf("whoami: %v %v", res, err)
	}
	var who struct{ Agent, Workspace string }
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &who)
	if who.Agent != "alice" || who.Workspace != "team" {
		t.Errorf("whoami on alice's stream: got %s, want alice in team", b)
	}
}
