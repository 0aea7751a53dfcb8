package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/mcpserver/mcptest"
	"github.com/parley-dev/parley/internal/ops"
)

// env is the tests' environment (mcptest.Env), under short names.
type env = mcptest.Env

var (
	newEnv  = mcptest.New
	call    = mcptest.Call
	text    = mcptest.Text
	waitFor = mcptest.WaitFor
)

// TestDoorsAgree runs each operation's refusals through /mcp and /api/v1:
// both doors give the same error, word for word (they once disagreed).
func TestDoorsAgree(t *testing.T) {
	e := newEnv(t)
	s := e.Session(ops.Caller{Workspace: "w", Agent: "alice"}, nil)
	for _, tc := range []struct {
		name         string
		tool         string
		args         map[string]any
		method, path string
		body         any
		want         string
	}{
		{"zero timeout", "wait_for_message", map[string]any{"timeout": 0}, "POST", "/inbox/wait", map[string]any{"timeout": 0}, "timeout 0 is out of range: want between 1 and 600 seconds, or none for the default 300"},
		{"long timeout", "wait_for_message", map[string]any{"timeout": 601}, "POST", "/inbox/wait", map[string]any{"timeout": 601}, "timeout 601 is out of range"},
		{"negative timeout", "wait_for_message", map[string]any{"timeout": -1}, "POST", "/inbox/wait", map[string]any{"timeout": -1}, "timeout -1 is out of range"},
		{"bad priority filter", "wait_for_message", map[string]any{"timeout": 1, "priority_filter": "loud"}, "POST", "/inbox/wait", map[string]any{"timeout": 1, "priority_filter": "loud"}, "invalid priority_filter"},
		{"negative limit", "check_messages", map[string]any{"limit": -1}, "POST", "/inbox/check", map[string]any{"limit": -1}, "limit must not be negative"},
		{"bad broadcast filter", "broadcast_message", map[string]any{"content": "x", "filter": map[string]any{"status": "idle"}}, "POST", "/broadcast", map[string]any{"content": "x", "filter": map[string]any{"status": "idle"}}, `invalid filter.status "idle": want all or active`},
		{"bad status", "set_status", map[string]any{"status": "asleep"}, "PUT", "/agents/alice/status", map[string]any{"status": "asleep"}, `invalid status "asleep"`},
		{"unknown group", "get_group", map[string]any{"name": "nope"}, "GET", "/groups/nope", nil, "nope"},
		{"bad member type", "add_group_member", map[string]any{"group": "everyone", "member_type": "robot", "member_id": "x"}, "POST", "/groups/everyone/members", map[string]any{"member_type": "robot", "member_id": "x"}, "robot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, s, tc.tool, tc.args, nil)
			if !res.IsError {
				t.Fatalf("mcp %s: got success %s, want an error", tc.tool, text(res))
			}
			mcpErr := text(res)
			code, body := e.Do(tc.method, tc.path, "w", "alice", tc.body)
			var eb api.ErrorBody
			if code/100 == 2 || json.Unmarshal(body, &eb) != nil {
				t.Fatalf("api %s %s: got %d %s, want an error", tc.method, tc.path, code, body)
			}
			if mcpErr != eb.Error.Message {
				t.Errorf("the doors disagree:\n mcp: %s\n api: %s", mcpErr, eb.Error.Message)
			}
			if !strings.Contains(mcpErr, tc.want) {
				t.Errorf("got %q, want it to contain %q", mcpErr, tc.want)
			}
		})
	}
}

// TestSendThroughBothDoors: a send says where it went and how present the
// recipient is, over either door; group creators are named the same way.
func TestSendThroughBothDoors(t *testing.T) {
	e := newEnv(t)
	alice := e.Session(ops.Caller{Workspace: "w", Agent: "alice", Role: "planner"}, nil)
	e.Session(ops.Caller{Workspace: "w", Agent: "bob", Role: "dev"}, nil) // bob is connected
	if code, body := e.Do("POST", "/agents", "w", "", api.JoinRequest{Name: "dave"}); code != 200 {
		t.Fatalf("join dave: %d %s", code, body)
	}

	for _, tc := range []struct{ to, want string }{
		{"bob", "active"},
		{"carol", "unregistered"},
		{"@everyone", "mixed"},
	} {
		var viaMCP api.SendResult
		if res := call(t, alice, "send_message", map[string]any{"to": tc.to, "content": "hi"}, &viaMCP); res.IsError {
			t.Fatalf("send to %s: %s", tc.to, text(res))
		}
		code, body := e.Do("POST", "/messages", "w", "alice", api.SendRequest{To: tc.to, Content: "hi"})
		var viaAPI api.SendResult
		if code != 200 || json.Unmarshal(body, &viaAPI) != nil {
			t.Fatalf("api send to %s: %d %s", tc.to, code, body)
		}
		if viaMCP.RecipientStatus != tc.want || viaAPI.RecipientStatus != tc.want {
			t.Errorf("send to %s: recipient_status mcp %q, api %q, want %q", tc.to, viaMCP.RecipientStatus, viaAPI.RecipientStatus, tc.want)
		}
	}

	// The native tool does not offer a payload; the JSON API does.
	if res := call(t, alice, "send_message", map[string]any{"to": "bob", "content": "x", "payload": map[string]any{"a": 1}}, nil); !res.IsError {
		t.Errorf("send_message with a payload: got success, want a refusal")
	}

	call(t, alice, "create_group", map[string]any{"name": "g1"}, nil)
	if code, body := e.Do("POST", "/groups", "w", "alice", api.GroupRequest{Name: "g2"}); code != 200 {
		t.Fatalf("api create group: %d %s", code, body)
	}
	want := hub.CompositeID("w", "planner", "alice")
	for _, g := range []string{"g1", "g2"} {
		var d api.GroupDetail
		call(t, alice, "get_group", map[string]any{"name": g}, &d)
		if d.CreatedBy != want {
			t.Errorf("group %s created_by %q, want %q", g, d.CreatedBy, want)
		}
	}
}

// TestWaitWakesAndKeepsAlive: a blocked wait returns the message sent to it,
// sending progress notifications meanwhile when asked.
func TestWaitWakesAndKeepsAlive(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	progress := 0
	bob := e.Session(ops.Caller{Workspace: "w", Agent: "bob"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress++
			mu.Unlock()
		},
	})
	alice := e.Session(ops.Caller{Workspace: "w", Agent: "alice"}, nil)
	done := make(chan api.WaitResult)
	go func() {
		params := &mcp.CallToolParams{Name: "wait_for_message", Arguments: map[string]any{"timeout": 30}}
		params.SetProgressToken("p1")
		res, err := bob.CallTool(context.Background(), params)
		var w api.WaitResult
		if err == nil && !res.IsError {
			b, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(b, &w)
		}
		done <- w
	}()
	waitFor(t, "bob's wait and two keep-alives", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return e.Hub.Waiters("w", "bob") == 1 && progress >= 2
	})
	call(t, alice, "send_message", map[string]any{"to": "bob", "content": "wake"}, nil)
	w := <-done
	if w.Status != "message_received" || w.Message == nil || w.Message.Content != "wake" {
		t.Fatalf("wait: got %+v, want the message", w)
	}
}

// TestAbandonedWaitEnds: a wait whose HTTP request is gone stops waiting,
// though the go-sdk does not cancel it for this protocol version. The client
// here hangs up without a notifications/cancelled, as a killed process does.
func TestAbandonedWaitEnds(t *testing.T) {
	e := newEnv(t)
	post := func(ctx context.Context, sid, body string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", e.API.URL+"/mcp?workspace=w&agent=bob", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		return e.API.Client().Do(req)
	}
	ctx := context.Background()
	resp, err := post(ctx, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %s, session %q", resp.Status, sid)
	}
	if resp, err = post(ctx, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := post(cctx, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait_for_message","arguments":{"timeout":600}}}`)
		if err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, "bob's wait", func() bool { return e.Hub.Waiters("w", "bob") == 1 })
	cancel()
	<-done
	waitFor(t, "the abandoned wait to end", func() bool { return e.Hub.Waiters("w", "bob") == 0 })
}

// TestSidechatAndAgentmail: the seed profiles are renamings of the same
// operations, with their own shapes and error codes.
