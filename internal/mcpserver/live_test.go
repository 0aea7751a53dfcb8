package mcpserver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/mcpserver"
	"github.com/parley-dev/parley/internal/ops"
	"github.com/parley-dev/parley/internal/store/sqlite"
)

// TestAbandonedSessionsEnd: a session whose client hung up its stream and
// did not come back ends after Linger, as does one that never finished
// initializing; a client that reconnects its stream, and one that never had
// one (it only posts), keep theirs.
func TestAbandonedSessionsEnd(t *testing.T) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h := hub.New(db, nil)
	srv := mcpserver.New(ops.New(h, nil), &mcpserver.Options{Linger: 300 * time.Millisecond})
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)

	do := func(ctx context.Context, method, sid, agent, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, hs.URL+"?workspace=w&agent="+agent, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	post := func(sid, agent, body string) int {
		resp := do(context.Background(), http.MethodPost, sid, agent, body)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	start := func(agent string, initialized bool) string {
		resp := do(context.Background(), http.MethodPost, "", agent, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sid := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != http.StatusOK || sid == "" {
			t.Fatalf("initialize %s: %s, session %q", agent, resp.Status, sid)
		}
		if initialized {
			if code := post(sid, agent, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
				t.Fatalf("initialized %s: status %d", agent, code)
			}
		}
		return sid
	}
	// stream opens the session's GET stream; cancelling ctx hangs it up.
	// A reconnect can meet the old stream not yet torn down (409), and
	// retries as a real client does.
	stream := func(ctx context.Context, sid, agent string) {
		status := ""
		waitFor(t, "the GET stream of "+agent+" to open", func() bool {
			resp := do(ctx, http.MethodGet, sid, agent, "")
			if resp.StatusCode == http.StatusOK {
				go func() {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}()
				return true
			}
			status = resp.Status
			resp.Body.Close()
			if resp.StatusCode != http.StatusConflict {
				t.Fatalf("GET stream of %s: %s", agent, status)
			}
			return false
		})
	}
	alive := func(sid, agent string) bool {
		return post(sid, agent, `{"jsonrpc":"2.0","id":9,"method":"ping"}`) == http.StatusOK
	}

	gone, back, poster, halfway := start("gone", true), start("back", true), start("poster", true), start("halfway", false)
	goneCtx, hangUpGone := context.WithCancel(context.Background())
	t.Cleanup(hangUpGone) // before the server closes, should the test stop early
	stream(goneCtx, gone, "gone")
	backCtx, hangUpBack := context.WithCancel(context.Background())
	t.Cleanup(hangUpBack)
	stream(backCtx, back, "back")
	if !h.Connected("w", "gone") || !h.Connected("w", "back") {
		t.Fatal("agents with open sessions: want connected")
	}

	// back's stream drops and comes back (a reconnecting client); then
	// gone's drops for good, after back's, so that back would end first
	// if dropping were enough to end a session.
	hangUpBack()
	again, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	stream(again, back, "back")
	hangUpGone()

	waitFor(t, "gone's session and the half-initialized one to end", func() bool {
		return srv.Sessions() <= 2 && !h.Connected("w", "gone") && !h.Connected("w", "halfway")
	})
	if code := post(gone, "gone", `{"jsonrpc":"2.0","id":9,"method":"ping"}`); code != http.StatusNotFound {
		t.Errorf("request to the abandoned session: status %d, want 404", code)
	}
	if code := post(halfway, "halfway", `{"jsonrpc":"2.0","id":9,"method":"ping"}`); code != http.StatusNotFound {
		t.Errorf("request to the session that never initialized: status %d, want 404", code)
	}
	if !alive(back, "back") {
		t.Error("the client that reconnected its stream lost its session")
	}
	if !alive(poster, "poster") {
		t.Error("the client without a stream lost its session")
	}
	if n := srv.Sessions(); n != 2 {
		t.Errorf("sessions: got %d, want 2 (back and poster)", n)
	}
	as, err := h.Agents(context.Background(), "w")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if want := a.Name == "back" || a.Name == "poster"; a.Active != want {
			t.Errorf("%s active: got %v, want %v", a.Name, a.Active, want)
		}
	}
}
