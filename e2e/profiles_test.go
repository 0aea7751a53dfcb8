package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func toolNames(t *testing.T, s *mcp.ClientSession) []string {
	t.Helper()
	tools, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

type scReceived struct {
	MessageID string         `json:"message_id"`
	Message   map[string]any `json:"message"`
}

// scReceive calls receive_message; it returns nil on a null (timeout) result.
func scReceive(t *testing.T, s *mcp.ClientSession, args map[string]any) *scReceived {
	t.Helper()
	res := call(t, s, "receive_message", args, nil)
	if res.IsError {
		t.Fatalf("receive_message(%v): tool error %s", args, text(res))
	}
	if text(res) == "null" {
		if res.StructuredContent != nil {
			t.Errorf("null result carries structured content %v", res.StructuredContent)
		}
		return nil
	}
	var r scReceived
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("receive_message result %s: %v", b, err)
	}
	var fromText scReceived
	if err := json.Unmarshal([]byte(text(res)), &fromText); err != nil || fromText.MessageID != r.MessageID {
		t.Errorf("receive_message text %q does not render the result %s", text(res), b)
	}
	return &r
}

func TestSidechatProfile(t *testing.T) {
	e := newEnv(t, "PARLEY_PROGRESS_EVERY=100ms")
	// Two processes, as two Sidechat users would have, with no identity at all:
	// the session and agent IDs are tool arguments. A session is a namespace
	// inside the workspace the process is bound to (here, both the
	// directory's), never a workspace of its own.
	narrator := e.Session(nil, "--profile", "sidechat")
	var progress atomic.Int32
	scribe := e.Session(&mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
		progress.Add(1)
	}}, "--profile", "sidechat")

	if got, want := toolNames(t, narrator), []string{"clear_messages", "has_messages", "receive_message", "send_message"}; !slices.Equal(got, want) {
		t.Fatalf("sidechat tools: got %v, want %v", got, want)
	}

	const sess = "historian-20251024-140530"
	t.Run("timeout returns null", func(t *testing.T) {
		start := time.Now()
		if r := scReceive(t, scribe, map[string]any{"session": sess, "as": "scribe", "timeout": 300}); r != nil {
			t.Fatalf("got %+v, want null", r)
		}
		if waited := time.Since(start); waited < 300*time.Millisecond {
			t.Errorf("returned after %v, before the 300 ms timeout", waited)
		}
		if r := scReceive(t, scribe, map[string]any{"session": sess, "as": "scribe", "timeout": 0}); r != nil {
			t.Fatalf("timeout 0: got %+v, want null", r)
		}
	})

	t.Run("FIFO and free-form objects", func(t *testing.T) {
		var ids []string
		for i, msg := range []map[string]any{
			{"type": "commit_request", "commit_num": 1, "description": "Add user authentication"},
			{"type": "commit_request", "commit_num": 2, "nested": map[string]any{"a": []any{1, "two", nil}}},
			{"type": "done"},
		} {
			var out struct {
				MessageID string `json:"message_id"`
			}
			mustCall(t, narrator, "send_message", map[string]any{"session": sess, "to": "scribe", "message": msg}, &out)
			if out.MessageID == "" {
				t.Fatalf("send %d: no message_id", i)
			}
			ids = append(ids, out.MessageID)
		}
		var has struct {
			HasMessages bool `json:"has_messages"`
			Count       int  `json:"count"`
		}
		mustCall(t, scribe, "has_messages", map[string]any{"session": sess, "agent": "scribe"}, &has)
		if !has.HasMessages || has.Count != 3 {
			t.Errorf("has_messages: got %+v, want 3", has)
		}
		for i, want := range ids {
			r := scReceive(t, scribe, map[string]any{"session": sess, "as": "scribe", "timeout": 1000})
			if r == nil || r.MessageID != want {
				t.Fatalf("receive %d: got %+v, want message %s (FIFO)", i, r, want)
			}
			if i == 1 {
				nested, _ := r.Message["nested"].(map[string]any)
				if r.Message["commit_num"] != float64(2) || nested == nil || len(nested["a"].([]any)) != 3 {
					t.Errorf("message 2 came back as %v, want the object as sent", r.Message)
				}
			}
		}
		// Received messages are gone.
		mustCall(t, scribe, "has_messages", map[string]any{"session": sess, "agent": "scribe"}, &has)
		if has.HasMessages || has.Count != 0 {
			t.Errorf("has_messages after receiving all: got %+v, want none", has)
		}
	})

	t.Run("blocks until a message arrives, with progress", func(t *testing.T) {
		progress.Store(0)
		got := make(chan *scReceived, 1)
		go func() {
			params := &mcp.CallToolParams{Name: "receive_message", Arguments: map[string]any{"session": sess, "as": "scribe"}} // no timeout: forever
			params.SetProgressToken("p1")
			res, err := scribe.CallTool(context.Background(), params)
			if err != nil || res.IsError {
				got <- nil
				return
			}
			var r scReceived
			b, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(b, &r)
			got <- &r
		}()
		time.Sleep(500 * time.Millisecond)
		select {
		case r := <-got:
			t.Fatalf("receive_message without timeout returned %+v before any message", r)
		default:
		}
		var out struct {
			MessageID string `json:"message_id"`
		}
		mustCall(t, narrator, "send_message", map[string]any{"session": sess, "to": "scribe", "message": map[string]any{"type": "wake"}}, &out)
		select {
		case r := <-got:
			if r == nil || r.MessageID != out.MessageID || r.Message["type"] != "wake" {
				t.Fatalf("blocked receive: got %+v, want message %s", r, out.MessageID)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("blocked receive_message did not wake on send")
		}
		if n := progress.Load(); n < 2 {
			t.Errorf("got %d progress notifications while blocked 0.5 s at 100 ms, want at least 2", n)
		}
	})

	t.Run("sessions are isolated", func(t *testing.T) {
		mustCall(t, narrator, "send_message", map[string]any{"session": "other-session", "to": "scribe", "message": map[string]any{"x": 1}}, nil)
		if r := scReceive(t, scribe, map[string]any{"session": sess, "as": "scribe", "timeout": 200}); r != nil {
			t.Fatalf("session %s received %+v sent to other-session", sess, r)
		}
		var cleared struct {
			Cleared int `json:"cleared"`
		}
		mustCall(t, scribe, "clear_messages", map[string]any{"session": "other-session", "agent": "scribe"}, &cleared)
		if cleared.Cleared != 1 {
			t.Errorf("clear_messages: got %d, want 1", cleared.Cleared)
		}
		if r := scReceive(t, scribe, map[string]any{"session": "other-session", "as": "scribe", "timeout": 0}); r != nil {
			t.Errorf("after clear_messages: got %+v, want null", r)
		}
		// A Sidechat session is a Parley workspace: the CLI sees it.
		var agents struct {
			Count int `json:"count"`
		}
		e.MustJSON(&agents, "agents", "--workspace", sess)
	})

	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			tool string
			args map[string]any
		}{
			{"message not an object", "send_message", map[string]any{"session": sess, "to": "scribe", "message": "text"}},
			{"no session", "send_message", map[string]any{"to": "scribe", "message": map[string]any{}}},
			{"bad agent id", "send_message", map[string]any{"session": sess, "to": "@all", "message": map[string]any{}}},
			{"control char in session", "receive_message", map[string]any{"session": "a\x01b", "as": "scribe", "timeout": 0}},
			{"negative timeout", "receive_message", map[string]any{"session": sess, "as": "scribe", "timeout": -1}},
			{"no as", "receive_message", map[string]any{"session": sess}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if res := call(t, narrator, tc.tool, tc.args, nil); !res.IsError {
					t.Errorf("%s(%v): got %s, want a tool error", tc.tool, tc.args, text(res))
				}
			})
		}
	})
}

// rawSession drives `parley mcp serve` with raw JSON lines.
type rawSession struct {
	t    *testing.T
	in   io.WriteCloser
	out  *bufio.Reader
	errb *syncBuffer
}

func (e *env) raw(t *testing.T, args ...string) *rawSession {
	c := e.Cmd(append([]string{"mcp", "serve"}, args...)...)
	in, _ := c.StdinPipe()
	out, _ := c.StdoutPipe()
	errb := &syncBuffer{}
	c.Stderr = errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			c.Process.Kill()
		}
	})
	r := &rawSession{t: t, in: in, out: bufio.NewReader(out), errb: errb}
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := r.recv(); m["result"] == nil {
		t.Fatalf("initialize: got %v", m)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

func (r *rawSession) send(line string) { io.WriteString(r.in, line+"\n") }

func (r *rawSession) recv() map[string]any {
	r.t.Helper()
	line, err := r.out.ReadString('\n')
	if err != nil {
		r.t.Fatalf("read stdout: %v (stderr %s)", err, r.errb.String())
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		r.t.Fatalf("stdout line is not JSON: %q", line)
	}
	return m
}

func TestAgentMailProfile(t *testing.T) {
	e := newEnv(t)
	alice := e.Session(nil, "--profile", "agentmail", "--workspace", "mail", "--agent", "alice")
	bob := e.Session(nil, "--profile", "agentmail", "--workspace", "mail", "--agent", "bob")
	carol := e.Session(nil, "--profile", "agentmail", "--workspace", "elsewhere", "--agent", "carol")

	if got, want := toolNames(t, alice), []string{"list-recipients", "receive", "send", "status"}; !slices.Equal(got, want) {
		t.Fatalf("agentmail tools: got %v, want %v", got, want)
	}

	var recips struct {
		Recipients []string `json:"recipients"`
	}
	mustCall(t, alice, "list-recipients", nil, &recips)
	if !slices.Equal(recips.Recipients, []string{"bob"}) {
		t.Errorf("list-recipients for alice: got %v, want [bob] (not herself, not carol of another workspace)", recips.Recipients)
	}

	res := call(t, bob, "receive", nil, nil)
	if res.IsError || text(res) != "No unread messages" {
		t.Errorf("receive on an empty inbox: got %q (error %v), want \"No unread messages\"", text(res), res.IsError)
	}

	var ids []string
	for _, m := range []string{"first", "second"} {
		var out struct {
			MessageID string `json:"message_id"`
		}
		res := call(t, alice, "send", map[string]any{"recipient": "bob", "message": m}, &out)
		if res.IsError || out.MessageID == "" || !strings.Contains(text(res), out.MessageID) {
			t.Fatalf("send: got %q %+v", text(res), out)
		}
		ids = append(ids, out.MessageID)
	}
	for i, want := range []string{"first", "second"} {
		var got struct {
			ID, From, Message string
		}
		res := call(t, bob, "receive", nil, &got)
		if res.IsError || got.ID != ids[i] || got.From != "alice" || got.Message != want || !strings.Contains(text(res), want) {
			t.Errorf("receive %d: got %+v (%q), want alice's %q, oldest first", i, got, text(res), want)
		}
	}
	if res := call(t, bob, "receive", nil, nil); text(res) != "No unread messages" {
		t.Errorf("receive after reading all: got %q", text(res))
	}
	if res := call(t, carol, "receive", nil, nil); text(res) != "No unread messages" {
		t.Errorf("carol of another workspace received %q", text(res))
	}

	for _, st := range []string{"work", "offline", "ready"} {
		mustCall(t, bob, "status", map[string]any{"status": st}, nil)
		var list struct {
			Agents []struct {
				Name       string `json:"name"`
				WorkStatus string `json:"work_status"`
			} `json:"agents"`
		}
		e.MustJSON(&list, "agents", "--workspace", "mail")
		got := ""
		for _, a := range list.Agents {
			if a.Name == "bob" {
				got = a.WorkStatus
			}
		}
		if got != st {
			t.Errorf("after status(%s): parley agents says bob is %q", st, got)
		}
	}

	// Error codes through a real client: protocol errors carry the code.
	for _, tc := range []struct {
		name string
		tool string
		args map[string]any
		code int64
	}{
		{"missing message", "send", map[string]any{"recipient": "bob"}, jsonrpc.CodeInvalidParams},
		{"missing recipient", "send", map[string]any{"message": "hi"}, jsonrpc.CodeInvalidParams},
		{"recipient not a string", "send", map[string]any{"recipient": 5, "message": "hi"}, jsonrpc.CodeInvalidParams},
		{"invalid recipient", "send", map[string]any{"recipient": "no spaces", "message": "hi"}, jsonrpc.CodeInvalidParams},
		{"unknown argument", "send", map[string]any{"recipient": "bob", "message": "hi", "cc": "carol"}, jsonrpc.CodeInvalidParams},
		{"bad status", "status", map[string]any{"status": "busy"}, jsonrpc.CodeInvalidParams},
		{"missing status", "status", nil, jsonrpc.CodeInvalidParams},
		{"receive takes no arguments", "receive", map[string]any{"limit": 1}, jsonrpc.CodeInvalidParams},
		{"unknown tool", "sendmail", nil, jsonrpc.CodeMethodNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := alice.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != tc.code {
				t.Errorf("%s(%v): got error %v, want JSON-RPC code %d", tc.tool, tc.args, err, tc.code)
			}
		})
	}
	// Nothing was sent by the failed calls.
	if res := call(t, bob, "receive", nil, nil); text(res) != "No unread messages" {
		t.Errorf("a refused send delivered %q", text(res))
	}
}

func TestAgentMailRawErrorCodes(t *testing.T) {
	e := newEnv(t)
	r := e.raw(t, "--profile", "agentmail", "--workspace", "mail", "--agent", "alice")
	for _, tc := range []struct {
		name string
		line string
		id   any // the id of the error response; nil for null
		code float64
	}{
		{"malformed JSON", `{"jsonrpc":"2.0","id":1,"method":"tools/call",`, nil, -32700},
		{"not JSON at all", `hello`, nil, -32700},
		{"empty batch", `[]`, nil, -32600},
		{"method of the wrong type", `{"jsonrpc":"2.0","id":2,"method":5}`, nil, -32600},
		{"unknown tool", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, float64(4), -32601},
		{"missing param", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"send","arguments":{"recipient":"bob"}}}`, float64(5), -32602},
		{"params not an object", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"status","arguments":"ready"}}`, float64(6), -32602},
		{"bad status", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"status","arguments":{"status":"asleep"}}}`, float64(7), -32602},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.send(tc.line)
			m := r.recv()
			errObj, _ := m["error"].(map[string]any)
			if errObj == nil || errObj["code"] != tc.code || m["id"] != tc.id {
				t.Errorf("%s: got %v, want error %v with id %v", tc.line, m, tc.code, tc.id)
			}
		})
	}
	// The session still serves after all that.
	r.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"send","arguments":{"recipient":"bob","message":"still here"}}}`)
	if m := r.recv(); m["id"] != float64(9) || m["result"] == nil {
		t.Fatalf("send after errors: got %v", m)
	}
}
