package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStateOwnerOnly: even under umask 000 and with a state directory made
// world-readable beforehand, every file the daemon makes (socket, pid, database
// and its WAL, log, token) is the owner's alone, and the directory is 0700.
// (TestDaemonLifecycle checks the defaults; this checks hostile starting points.)
func TestStateOwnerOnly(t *testing.T) {
	e := newEnv(t)
	if err := os.Chmod(e.home, 0o755); err != nil {
		t.Fatal(err)
	}
	c := osexec.Command("sh", "-c", `umask 000 && exec "$0" daemon start --listen 127.0.0.1:0`, bin)
	c.Env, c.Dir = e.environ(), e.home
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("daemon start under umask 000: %v\n%s", err, out)
	}
	// Write something so the WAL and shared-memory files exist.
	e.mustAPI("POST", "/messages", "w", "a", map[string]any{"to": "b", "content": "hi"}, nil)
	st, err := os.Stat(e.home)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o700 {
		t.Errorf("state directory: got %o, want 700", got)
	}
	var seen []string
	filepath.WalkDir(e.home, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == e.home {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return nil // gone meanwhile
		}
		seen = append(seen, d.Name())
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %o, want no group or other permissions", d.Name(), fi.Mode().Perm())
		}
		return nil
	})
	for _, want := range []string{"parley.sock", "parley.pid", "parley.db", "parley.db-wal", "daemon.log", "token"} {
		if !slices.Contains(seen, want) {
			t.Errorf("state directory lacks %s (has %v)", want, seen)
		}
	}
}

// TestTCPTokenRequired: over TCP every endpoint wants the bearer token; a
// missing, wrong or truncated one gets 401 and no data; the right one works.
// (internal/daemon/tcp_test.go covers Host and Origin; the comparison is
// crypto/subtle.ConstantTimeCompare in internal/daemon/tcp.go.)
func TestTCPTokenRequired(t *testing.T) {
	e := newEnv(t)
	out := e.Must("daemon", "start", "--listen", "127.0.0.1:0")
	var st struct {
		Listen string `json:"listen"`
	}
	e.MustJSON(&st, "daemon", "status")
	if st.Listen == "" {
		t.Fatalf("no TCP address in daemon status after %q", out)
	}
	tok, err := os.ReadFile(filepath.Join(e.home, "token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	bodies := map[string]string{
		"/api/v1/status":   "",
		"/api/v1/agents":   "",
		"/api/v1/messages": `{"to":"b","content":"secret"}`,
		"/mcp":             `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
	}
	for _, auth := range []struct {
		name, header string
		want         int
	}{
		{"none", "", http.StatusUnauthorized},
		{"wrong", "Bearer " + strings.Repeat("f", len(token)), http.StatusUnauthorized},
		{"truncated", "Bearer " + token[:len(token)-2], http.StatusUnauthorized},
		{"longer", "Bearer " + token + "00", http.StatusUnauthorized},
		{"not bearer", "Basic " + token, http.StatusUnauthorized},
		{"right", "Bearer " + token, http.StatusOK},
	} {
		for path, body := range bodies {
			t.Run(auth.name+path, func(t *testing.T) {
				method := "GET"
				if body != "" {
					method = "POST"
				}
				req, _ := http.NewRequest(method, "http://"+st.Listen+path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Parley-Agent", "a")
				if path == "/mcp" { // an MCP session must name its workspace
					req.Header.Set("Parley-Workspace", "default")
				}
				if auth.header != "" {
					req.Header.Set("Authorization", auth.header)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != auth.want {
					t.Errorf("%s %s with %s token: got %d %s, want %d", method, path, auth.name, resp.StatusCode, b, auth.want)
				}
				if auth.want == http.StatusUnauthorized && (bytes.Contains(b, []byte(`"pid"`)) || bytes.Contains(b, []byte("message_id"))) {
					t.Errorf("401 body leaks data: %s", b)
				}
			})
		}
	}
	// Nothing sent without the token was stored.
	var h struct {
		Messages []json.RawMessage `json:"messages"`
	}
	e.mustAPI("GET", "/messages", "default", "", nil, &h)
	if len(h.Messages) != 1 { // the one send with the right token
		t.Errorf("history after the refused sends: got %d messages, want 1", len(h.Messages))
	}
}

// TestWorkspaceIsolationEverySurface (the full table behind messaging_test.go's
// TestWorkspaceIsolation): an agent of workspace alpha can never read or write
// workspace beta's agents, messages or groups, through any native, sidechat or
// agentmail tool or any /api/v1 endpoint. Beta's state is checked unchanged
// after every attempt.
func TestWorkspaceIsolationEverySurface(t *testing.T) {
	e := newEnv(t)
	e.Must("daemon", "start")
	const alpha, beta = "alpha", "beta"
	e.mustAPI("POST", "/agents", beta, "", map[string]any{"name": "bob", "role": "dev"}, nil)
	e.mustAPI("POST", "/agents", beta, "", map[string]any{"name": "carol", "role": "lead"}, nil)
	e.mustAPI("POST", "/groups", beta, "carol", map[string]any{"name": "team"}, nil)
	e.mustAPI("POST", "/groups/team/members", beta, "carol", map[string]any{"member_type": "agent", "member_id": "bob"}, nil)
	var betaIDs []string
	for i := 0; i < 3; i++ {
		var r struct {
			ID string `json:"message_id"`
		}
		e.mustAPI("POST", "/messages", beta, "carol", map[string]any{"to": "bob", "content": fmt.Sprintf("beta secret %d", i)}, &r)
		betaIDs = append(betaIDs, r.ID)
	}
	var bob struct {
		ID string `json:"agent_id"`
	}
	e.mustAPI("GET", "/agents/bob", beta, "", nil, &bob)
	if !strings.HasPrefix(bob.ID, "agent:dev:") {
		t.Fatalf("bob's composite id: got %q", bob.ID)
	}
	// Alpha has its own bob, so name-based calls have a target there.
	e.mustAPI("POST", "/agents", alpha, "", map[string]any{"name": "bob", "role": "qa"}, nil)

	// What alpha must never learn: beta's contents, carol's role, the name
	// "beta" itself; and, in a successful answer, names it did not give.
	// (An error may echo back the name or id the caller asked about.)
	leaks := func(s string, failed bool) bool {
		if strings.Contains(s, "beta secret") || strings.Contains(s, "lead") || strings.Contains(s, "beta") {
			return true
		}
		return !failed && (strings.Contains(s, "carol") || strings.Contains(s, "team") ||
			slices.ContainsFunc(betaIDs, func(id string) bool { return strings.Contains(s, id) }))
	}
	native := e.Session(nil, "--workspace", alpha, "--agent", "mallory")
	nativeBob := e.Session(nil, "--workspace", alpha, "--agent", "bob")
	sidechat := e.Session(nil, "--workspace", alpha, "--agent", "mallory", "--profile", "sidechat")
	agentmail := e.Session(nil, "--workspace", alpha, "--agent", "mallory", "--profile", "agentmail")

	type toolCase struct {
		name    string
		s       *mcp.ClientSession
		tool    string
		args    map[string]any
		wantErr bool // a tool error, not a result
	}
	tools := []toolCase{
		{"native list_agents", native, "list_agents", nil, false},
		{"native list_groups", native, "list_groups", nil, false},
		{"native get_group", native, "get_group", map[string]any{"name": "team", "expand": true}, true},
		{"native add_group_member", native, "add_group_member", map[string]any{"group": "team", "member_type": "agent", "member_id": "mallory"}, true},
		{"native remove_group_member", native, "remove_group_member", map[string]any{"group": "team", "member_type": "agent", "member_id": "bob"}, true},
		{"native delete_group", native, "delete_group", map[string]any{"name": "team"}, true},
		{"native send to group", native, "send_message", map[string]any{"to": "@team", "content": "x"}, true},
		{"native send to role", native, "send_message", map[string]any{"to": "@dev", "content": "x"}, true},
		{"native send to composite id", native, "send_message", map[string]any{"to": bob.ID, "content": "x"}, true},
		{"native reply to foreign message", native, "send_message", map[string]any{"to": "bob", "content": "x", "reply_to": betaIDs[0]}, true},
		{"native get_thread", native, "get_thread", map[string]any{"message_id": betaIDs[0]}, true},
		{"native broadcast", native, "broadcast_message", map[string]any{"content": "to all of alpha"}, false},
		{"native check as namesake", nativeBob, "check_messages", map[string]any{"limit": 100}, false},
		{"native wait as namesake", nativeBob, "wait_for_message", map[string]any{"timeout": 1}, false},
		{"sidechat has_messages", sidechat, "has_messages", map[string]any{"session": alpha, "agent": "bob"}, false},
		{"sidechat receive", sidechat, "receive_message", map[string]any{"session": alpha, "as": "bob", "timeout": 0}, false},
		{"sidechat clear", sidechat, "clear_messages", map[string]any{"session": alpha, "agent": "bob"}, false},
		{"sidechat send", sidechat, "send_message", map[string]any{"session": alpha, "to": "bob", "message": map[string]any{"x": 1}}, false},
		{"agentmail list-recipients", agentmail, "list-recipients", nil, false},
		{"agentmail receive", agentmail, "receive", nil, false},
		{"agentmail send", agentmail, "send", map[string]any{"recipient": "bob", "message": "x"}, false},
	}
	for _, tc := range tools {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, tc.s, tc.tool, tc.args, nil)
			b, _ := json.Marshal(res)
			if tc.wantErr && !res.IsError {
				t.Errorf("%s(%v) from alpha: got a result %s, want a tool error", tc.tool, tc.args, b)
			}
			if leaks(string(b), res.IsError) {
				t.Errorf("%s(%v) from alpha leaks beta: %s", tc.tool, tc.args, b)
			}
		})
	}

	hc := e.httpClient()
	endpoints := []struct {
		method, path, agent string
		body                any
		wantCode            int // 0: any 2xx
	}{
		{"GET", "/agents", "mallory", nil, 0},
		{"GET", "/agents/carol", "mallory", nil, http.StatusNotFound},
		{"PUT", "/agents/carol/status", "mallory", map[string]any{"status": "offline"}, http.StatusNotFound},
		{"GET", "/groups", "mallory", nil, 0},
		{"GET", "/groups/team?expand=true", "mallory", nil, http.StatusNotFound},
		{"DELETE", "/groups/team", "mallory", nil, http.StatusNotFound},
		{"POST", "/groups/team/members", "mallory", map[string]any{"member_type": "agent", "member_id": "mallory"}, http.StatusNotFound},
		{"DELETE", "/groups/team/members", "mallory", map[string]any{"member_type": "agent", "member_id": "bob"}, http.StatusNotFound},
		{"GET", "/messages?limit=1000", "mallory", nil, 0},
		{"GET", "/messages?with=bob", "mallory", nil, 0},
		{"GET", "/messages?thread=" + betaIDs[0], "mallory", nil, 0},
		{"GET", "/messages/" + betaIDs[0], "mallory", nil, http.StatusNotFound},
		{"POST", "/messages", "mallory", map[string]any{"to": "@team", "content": "x"}, http.StatusNotFound},
		{"POST", "/messages", "mallory", map[string]any{"to": bob.ID, "content": "x"}, http.StatusNotFound},
		{"GET", "/inbox?limit=1000", "bob", nil, 0},
		{"POST", "/inbox/check", "bob", map[string]any{"limit": 1000}, 0},
		{"POST", "/inbox/wait", "bob", map[string]any{"timeout": 1}, 0},
		{"POST", "/broadcast", "mallory", map[string]any{"content": "hello alpha"}, 0},
	}
	for _, ep := range endpoints {
		t.Run("api "+ep.method+" "+ep.path, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			code, body, err := e.apiCall(ctx, hc, ep.method, ep.path, alpha, ep.agent, ep.body)
			if err != nil {
				t.Fatal(err)
			}
			if (ep.wantCode == 0 && code/100 != 2) || (ep.wantCode != 0 && code != ep.wantCode) {
				t.Errorf("%s %s from alpha: got %d %s, want %d", ep.method, ep.path, code, body, ep.wantCode)
			}
			if leaks(string(body), code/100 != 2) {
				t.Errorf("%s %s from alpha leaks beta: %s", ep.method, ep.path, body)
			}
		})
	}

	// Beta is exactly as it was.
	var inbox struct {
		Messages []struct {
			ID string `json:"message_id"`
		} `json:"messages"`
	}
	e.mustAPI("GET", "/inbox?limit=100", beta, "bob", nil, &inbox)
	var got []string
	for _, m := range inbox.Messages {
		got = append(got, m.ID)
	}
	if !slices.Equal(got, betaIDs) {
		t.Errorf("beta bob's inbox after alpha's attempts: got %v, want %v", got, betaIDs)
	}
	var g struct {
		Members []struct {
			ID string `json:"id"`
		} `json:"members"`
	}
	e.mustAPI("GET", "/groups/team", beta, "", nil, &g)
	if len(g.Members) != 1 || g.Members[0].ID != "bob" {
		t.Errorf("beta group team after alpha's attempts: got %+v, want bob alone", g.Members)
	}
	var as struct {
		Agents []struct {
			Name   string `json:"name"`
			Status string `json:"work_status"`
		} `json:"agents"`
	}
	e.mustAPI("GET", "/agents", beta, "", nil, &as)
	var names []string
	for _, a := range as.Agents {
		names = append(names, a.Name+"/"+a.Status)
	}
	if strings.Join(names, " ") != "bob/ready carol/ready" {
		t.Errorf("beta agents after alpha's attempts: got %v, want bob/ready carol/ready", names)
	}
}

// TestOversizedAndNestedJSON: a 10 MB body and a 100,000-deep array, to /mcp and
// to /api/v1, get a clear refusal (413, 400 or a JSON-RPC error) instead of
// being parsed in full, and the daemon keeps answering promptly.
func TestOversizedAndNestedJSON(t *testing.T) {
	e := newEnv(t)
	e.Must("daemon", "start")
	hc := e.httpClient()
	huge := `{"to":"b","content":"` + strings.Repeat("x", 10<<20) + `"}`
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	deepObj := `{"to":"b","content":"x","metadata":` + strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000) + "}"
	initReq := func(params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":` + params + `}`
	}
	// A live MCP session, for calls inside a session.
	sid := func() string {
		req, _ := http.NewRequest("POST", "http://parley/mcp?agent=a&workspace=w", strings.NewReader(initReq(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}`)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Header.Get("Mcp-Session-Id")
	}()
	if sid == "" {
		t.Fatal("no MCP session id")
	}
	tests := []struct {
		name, path, body string
		session          bool
	}{
		{"api 10MB", "/api/v1/messages", huge, false},
		{"api deep array", "/api/v1/messages", deep, false},
		{"api deep object", "/api/v1/messages", deepObj, false},
		{"mcp new session 10MB", "/mcp", initReq(`{"x":"` + strings.Repeat("x", 10<<20) + `"}`), false},
		{"mcp new session deep array", "/mcp", deep, false},
		{"mcp in session 10MB", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send_message","arguments":{"to":"b","content":"` + strings.Repeat("x", 10<<20) + `"}}}`, true},
		{"mcp in session deep", "/mcp", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"send_message","arguments":` + deep + `}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", "http://parley"+tt.path, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Parley-Agent", "a")
			req.Header.Set("Parley-Workspace", "w")
			if tt.session {
				req.Header.Set("Mcp-Session-Id", sid)
				req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			}
			start := time.Now()
			resp, err := hc.Do(req)
			var code int
			var b []byte
			if err == nil {
				code = resp.StatusCode
				b, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<16))
				resp.Body.Close()
			} else if !isConnReset(err) {
				t.Fatalf("request: %v", err)
			}
			took := time.Since(start)
			refused := code == http.StatusRequestEntityTooLarge || code == http.StatusBadRequest ||
				(code == http.StatusOK && bytes.Contains(b, []byte(`"error"`)) && !bytes.Contains(b, []byte(`"result"`))) ||
				err != nil // the server may cut the upload off
			if !refused {
				t.Errorf("got %d %.300s, want a refusal (413, 400 or a JSON-RPC error)", code, b)
			}
			if code != 0 && len(b) == 0 && code != http.StatusOK {
				t.Errorf("refusal %d has no body saying why", code)
			}
			t.Logf("%s: %d in %s: %.200s", tt.name, code, took.Round(time.Millisecond), b)
			// Still responsive.
			hctx, hcancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer hcancel()
			if code, body, err := e.apiCall(hctx, hc, "GET", "/health", "w", "", nil); err != nil || code != http.StatusOK {
				t.Fatalf("health after %s: %d %s %v", tt.name, code, body, err)
			}
		})
	}
	// Nothing of it was stored.
	var h struct {
		Messages []json.RawMessage `json:"messages"`
	}
	e.mustAPI("GET", "/messages", "w", "", nil, &h)
	if len(h.Messages) != 0 {
		t.Errorf("history after refused bodies: got %d messages, want 0", len(h.Messages))
	}
}

// isConnReset reports a transport error from a server that cut a request off.
func isConnReset(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) || strings.Contains(err.Error(), "connection reset") ||
		strings.Contains(err.Error(), "broken pipe") || strings.Contains(err.Error(), "EOF")
}

// TestLogsHoldNoContent: message content never reaches daemon.log at the
// default level, whichever way it was sent and whether the send succeeded.
func TestLogsHoldNoContent(t *testing.T) {
	e := newEnv(t)
	e.Must("daemon", "start")
	const marker = "zq-7f3a-MARKER-do-not-log"
	s := e.Session(nil, "--workspace", "w", "--agent", "a")
	mustCall(t, s, "send_message", map[string]any{"to": "b", "content": "native " + marker}, nil)
	call(t, s, "send_message", map[string]any{"to": "@nobody", "content": "failing " + marker}, nil)
	call(t, s, "send_message", map[string]any{"to": "b", "content": "big " + marker + strings.Repeat("y", 300<<10)}, nil)
	mustCall(t, s, "broadcast_message", map[string]any{"content": "broadcast " + marker}, nil)
	sc := e.Session(nil, "--workspace", "w", "--agent", "a", "--profile", "sidechat")
	mustCall(t, sc, "send_message", map[string]any{"session": "w", "to": "b", "message": map[string]any{"text": "sidechat " + marker}}, nil)
	e.mustAPI("POST", "/messages", "w", "a", map[string]any{"to": "b", "content": "api " + marker, "metadata": map[string]string{"k": marker}}, nil)
	e.Must("send", "--workspace", "w", "--agent", "a", "b", "cli "+marker)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.apiCall(ctx, e.httpClient(), "POST", "/messages", "w", "a", json.RawMessage(`{"to":"b","content":"bad json `+marker+`"`))
	bs := e.Session(nil, "--workspace", "w", "--agent", "b")
	mustCall(t, bs, "check_messages", map[string]any{"limit": 100}, nil)
	e.Must("daemon", "stop")
	log, err := os.ReadFile(filepath.Join(e.home, "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(log) == 0 {
		t.Fatal("daemon.log is empty: the check would prove nothing")
	}
	if i := bytes.Index(log, []byte(marker)); i >= 0 {
		t.Errorf("daemon.log holds message content: %q", log[max(0, i-200):min(len(log), i+100)])
	}
}
