package daemon

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/parley-dev/parley/internal/api"
)

// dialEvents opens /api/v1/events over the daemon's socket with a real
// WebSocket client.
func dialEvents(t testing.TB, d *Daemon, query string, h http.Header) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws://parley/api/v1/events"+query, &websocket.DialOptions{HTTPClient: unixClient(d), HTTPHeader: h})
	if err != nil {
		var body []byte
		if resp != nil && resp.Body != nil {
			body, _ = io.ReadAll(resp.Body)
		}
		t.Fatalf("dial events%s: %v %s", query, err, body)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func nextEvent(t testing.TB, c *websocket.Conn) api.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read event: %v", err)
	}
	var e api.Event
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("decode event %s: %v", b, err)
	}
	return e
}

// TestEventsBadRequests: the daemon's event stream refuses what it cannot
// serve, and browser origins it did not issue (its own check, before the
// route table's).
func TestEventsBadRequests(t *testing.T) {
	d := startDaemon(t, Config{})
	hc := unixClient(d)
	cases := []struct {
		name, query, origin string
		want                int
		msg                 string
	}{
		{"no workspace", "", "", 400, "all=true"},
		{"workspace and all", "?workspace=a&all=true", "", 400, "not both"},
		{"unknown kind", "?workspace=a&kinds=message.sent,nope", "", 400, "unknown event kind"},
		{"foreign origin", "?workspace=a", "http://evil.example.com", 403, "cross-origin"},
		{"not a websocket", "?workspace=a", "", 426, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, _ := http.NewRequest("GET", "http://parley/api/v1/events"+c.query, nil)
			if c.origin != "" {
				r.Header.Set("Origin", c.origin)
			}
			resp, err := hc.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want || !strings.Contains(string(b), c.msg) {
				t.Errorf("got %d %s, want %d with %q", resp.StatusCode, b, c.want, c.msg)
			}
		})
	}
}
