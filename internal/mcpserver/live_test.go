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
	h, srv, hs := liveServer(t, &mcpserver.Options{Linger: 300 * time.Millisecond})

	do := func(ctx context.Context, method, sid, agent, body string) *http.Response {
		t.Helper()
		resp, err := mcpRequest(ctx, hs, method, sid, agent, body)
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

// TestDeleteEndsBlockedWait: a session deleted by its client while one of
// its calls blocks in a wait ends at once, and the wait takes nothing: the
// SDK's close waits for calls in flight, so without this the DELETE hung
// until the wait timed out.
func TestDeleteEndsBlockedWait(t *testing.T) {
	h, srv, hs := liveServer(t, nil)

	do := func(method, sid, body string) (int, string) {
		resp, err := mcpRequest(context.Background(), hs, method, sid, "bob", body)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if sid == "" {
			return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
		}
		return resp.StatusCode, string(b)
	}
	code, sid := do(http.MethodPost, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d, session %q", code, sid)
	}
	if code, _ := do(http.MethodPost, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("initialized: %d", code)
	}
	waited := make(chan string, 1)
	go func() {
		_, body := do(http.MethodPost, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait_for_message","arguments":{"timeout":60}}}`)
		waited <- body
	}()
	waitFor(t, "bob's wait to block", func() bool { return h.Waiters("w", "bob") == 1 })

	deleted := make(chan int, 1)
	go func() {
		code, _ := do(http.MethodDelete, sid, "")
		deleted <- code
	}()
	select {
	case code := <-deleted:
		if code/100 != 2 {
			t.Errorf("DELETE: status %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("DELETE of a session with a blocked wait did not return in 10 s")
	}
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the blocked wait did not end with its session")
	}
	// Nothing was taken: a message sent now stays in bob's inbox.
	if _, err := h.Send(context.Background(), hub.SendRequest{Workspace: "w", From: "alice", To: "bob", Content: "after"}); err != nil {
		t.Fatal(err)
	}
	if n, err := h.Unread(context.Background(), "w", "bob"); err != nil || n != 1 {
		t.Errorf("bob's unread after the DELETE and a send: %d %v, want 1", n, err)
	}
	if n := srv.Sessions(); n != 0 {
		t.Errorf("sessions after DELETE: %d, want 0", n)
	}
}

// liveServer serves a real hub over SQLite at /mcp on a test HTTP server.
func liveServer(t *testing.T, opts *mcpserver.Options) (*hub.Hub, *mcpserver.Server, *httptest.Server) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h := hub.New(db, nil)
	srv := mcpserver.New(ops.New(h, nil), opts)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return h, srv, hs
}

// mcpRequest sends one raw Streamable HTTP request as agent in workspace w.
func mcpRequest(ctx context.Context, hs *httptest.Server, method, sid, agent, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, hs.URL+"?workspace=w&agent="+agent, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	return hs.Client().Do(req)
}
