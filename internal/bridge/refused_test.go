package bridge_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/bridge"
)

// TestHTTPErrorBodies checks how an HTTP error status reaches the client: a
// body that is a JSON-RPC error is passed on; any other JSON error body (such
// as the daemon's own {"error":{"kind","message"}}, e.g. a 401 for a missing
// token) must become a valid JSON-RPC error with a numeric code, never an
// error object without one (clients then wait forever for a valid answer).
func TestHTTPErrorBodies(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		body     string
		wantCode float64
		wantMsg  string
	}{
		{"api error body", 401, `{"error":{"kind":"unauthorized","message":"missing or wrong bearer token"}}`, -32603, "HTTP 401 Unauthorized: "},
		{"error string", 403, `{"error":"forbidden"}`, -32603, "HTTP 403 Forbidden: "},
		{"json-rpc error", 400, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"bad request from server"}}`, -32600, "bad request from server"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				io.WriteString(w, c.body)
			}))
			defer srv.Close()
			w, r, _ := runBridge(t, &bridge.Options{URL: srv.URL + "/mcp"})
			rc := newRawClient(t, w, r)
			rc.send(initLine)
			m := rc.recv()
			e, _ := m["error"].(map[string]any)
			msg, _ := e["message"].(string)
			if m["id"] != float64(1) || e == nil || e["code"] != c.wantCode || !strings.Contains(msg, c.wantMsg) {
				t.Fatalf("got %v, want error code %v with %q", m, c.wantCode, c.wantMsg)
			}
		})
	}
}
