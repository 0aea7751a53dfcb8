package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/testenv/standin"
)

// tap is a go-sdk client transport that hands the test every notification
// the server sends (the SDK drops methods it does not know, such as Claude
// Code's channel notifications) and lets the test send its own.
type tap struct {
	mcp.Transport
	notes chan *jsonrpc.Request
	mu    sync.Mutex
	conn  mcp.Connection
}

type tapConn struct {
	mcp.Connection
	t *tap
}

func (t *tap) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.conn = c
	t.mu.Unlock()
	return tapConn{c, t}, nil
}

func (c tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Request); ok && !r.IsCall() && strings.HasPrefix(r.Method, "notifications/claude/") {
		c.t.notes <- r
	}
	return m, err
}

// notify sends a notification of the client's own to the server.
func (t *tap) notify(ctx context.Context, method string, params any) error {
	b, _ := json.Marshal(params)
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	return c.Write(ctx, &jsonrpc.Request{Method: method, Params: b})
}

func (t *tap) next(tb testing.TB) *jsonrpc.Request {
	tb.Helper()
	select {
	case n := <-t.notes:
		return n
	case <-time.After(20 * time.Second):
		tb.Fatalf("no channel notification within 20 s")
		return nil
	}
}

// channelSession connects a go-sdk client through `parley mcp serve --channel`.
func channelSession(t testing.TB, e *env, args ...string) (*mcp.ClientSession, *tap) {
	t.Helper()
	c := e.Cmd(append([]string{"mcp", "serve", "--channel"}, args...)...)
	stderr := &syncBuffer{}
	c.Stderr = stderr
	tp := &tap{Transport: &mcp.CommandTransport{Command: c}, notes: make(chan *jsonrpc.Request, 1024)}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := mcp.NewClient(&mcp.Implementation{Name: "channel-test", Version: "1"}, nil).Connect(ctx, tp, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect mcp serve --channel: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		s.Close()
		if t.Failed() {
			t.Logf("mcp serve --channel stderr:\n%s", stderr.String())
		}
	})
	return s, tp
}

type channelParams struct {
	Content string            `json:"content"`
	Meta    map[string]string `json:"meta"`
}

// TestChannelPush: `mcp serve --channel` declares Claude Code's channel
// capabilities and pushes each message for its agent as it arrives, with
// the meta a reply needs; the agent replies with send_message.
func TestChannelPush(t *testing.T) {
	e := newEnv(t)
	bob, tp := channelSession(t, e, "--agent", "bob", "--workspace", "w")
	caps := bob.InitializeResult().Capabilities
	if _, ok := caps.Experimental["claude/channel"]; !ok {
		t.Errorf("capabilities: no experimental claude/channel in %+v", caps)
	}
	if _, ok := caps.Experimental["claude/channel/permission"]; !ok {
		t.Errorf("capabilities: no experimental claude/channel/permission in %+v", caps)
	}
	if caps.Tools == nil || !strings.Contains(bob.InitializeResult().Instructions, "send_message") {
		t.Errorf("the server's own capabilities or the channel instructions are missing: %+v", bob.InitializeResult())
	}
	alice := e.Session(nil, "--agent", "alice", "--workspace", "w")
	var sent struct {
		MessageID string `json:"message_id"`
	}
	mustCall(t, alice, "send_message", map[string]any{"to": "bob", "content": "build is red", "priority": "high"}, &sent)
	n := tp.next(t)
	var p channelParams
	json.Unmarshal(n.Params, &p)
	if n.Method != "notifications/claude/channel" || p.Content != "build is red" || p.Meta["from"] != "alice" || p.Meta["message_id"] != sent.MessageID || p.Meta["priority"] != "high" {
		t.Fatalf("notification: got %s %+v, want the message from alice with its id and priority", n.Method, p)
	}
	// The push confirms it once written to Claude Code, not before.
	waitUntil(t, "the pushed message confirmed read", func() bool {
		var st struct {
			Recipients []struct {
				State string `json:"state"`
			} `json:"recipients"`
		}
		mustCall(t, alice, "message_status", map[string]any{"message_id": sent.MessageID}, &st)
		return len(st.Recipients) == 1 && st.Recipients[0].State == "read"
	})
	// The reply threads; the channel shows it with its thread and reply ids.
	mustCall(t, bob, "send_message", map[string]any{"to": "alice", "content": "on it", "reply_to": p.Meta["message_id"]}, nil)
	var w struct {
		Message *struct {
			ReplyTo string `json:"reply_to"`
		} `json:"message"`
	}
	mustCall(t, alice, "wait_for_message", map[string]any{"timeout": 10}, &w)
	if w.Message == nil || w.Message.ReplyTo != sent.MessageID {
		t.Errorf("alice got %+v, want bob's reply to %s", w.Message, sent.MessageID)
	}
	mustCall(t, alice, "send_message", map[string]any{"to": "bob", "content": "thanks", "reply_to": p.Meta["message_id"]}, nil)
	json.Unmarshal(tp.next(t).Params, &p)
	if p.Content != "thanks" || p.Meta["reply_to"] != sent.MessageID || p.Meta["thread_id"] != sent.MessageID {
		t.Errorf("threaded notification: got %+v, want reply_to and thread_id %s", p, sent.MessageID)
	}
	// The channel is how they reached bob.
	var st api.MessageStatusResult
	mustCall(t, alice, "message_status", map[string]any{"message_id": sent.MessageID}, &st)
	if len(st.Recipients) != 1 || st.Recipients[0].WakePath != "channel" || st.Recipients[0].WokenAt == "" {
		t.Errorf("message_status: got %+v, want bob's copy woken by the channel", st.Recipients)
	}
	// Pushed messages are read: nothing waits in bob's inbox.
	var c struct {
		Messages []any `json:"messages"`
	}
	mustCall(t, bob, "check_messages", nil, &c)
	if len(c.Messages) != 0 {
		t.Errorf("bob's inbox after the pushes: %d messages, want 0", len(c.Messages))
	}
	// Without an identity, --channel refuses at start, saying why.
	if _, errs, code := e.Run("mcp", "serve", "--channel", "--workspace", "w"); code == 0 || !strings.Contains(errs, "--agent NAME") {
		t.Errorf("--channel without identity: exit %d, %q", code, errs)
	}
}

// TestChannelPermissionRelay: a prompt Claude Code relays becomes a request
// in Parley's inbox; the first decision goes back as
// notifications/claude/channel/permission.
func TestChannelPermissionRelay(t *testing.T) {
	e := newEnv(t)
	_, tp := channelSession(t, e, "--agent", "bob", "--workspace", "w")
	ctx := context.Background()
	if err := tp.notify(ctx, "notifications/claude/channel/permission_request", map[string]string{
		"request_id": "abcde", "tool_name": "Bash", "description": "run the tests", "input_preview": `{"command":"make test"}`}); err != nil {
		t.Fatal(err)
	}
	var pending api.PermissionsResult
	deadline := time.Now().Add(20 * time.Second)
	for len(pending.Permissions) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the relayed prompt never reached the inbox")
		}
		e.MustJSON(&pending, "permissions", "--workspace", "w")
	}
	p := pending.Permissions[0].Request
	if p.AgentID != "bob" || p.Source != "channel" || p.ToolName != "Bash" || p.Description != "run the tests" || p.ToolUseID != "abcde" {
		t.Fatalf("request: got %+v", p)
	}
	e.Must("deny", p.RequestID)
	n := tp.next(t)
	var v struct {
		RequestID string `json:"request_id"`
		Behavior  string `json:"behavior"`
	}
	json.Unmarshal(n.Params, &v)
	if n.Method != "notifications/claude/channel/permission" || v.RequestID != "abcde" || v.Behavior != "deny" {
		t.Errorf("verdict: got %s %+v, want deny for abcde", n.Method, v)
	}
}

// TestClaudeConnectsToChannel: the real Claude Code starts `parley mcp serve
// --channel` and connects to it (channels themselves need a claude.ai
// login, so no notification reaches its model here).
func TestClaudeConnectsToChannel(t *testing.T) {
	claude := standin.CLI(t, "claude")
	e := newEnv(t)
	repo, claudeHome := claudeRepo(t, e, "--agent", "lead", "--channel")
	m := readJSON(t, filepath.Join(repo, ".mcp.json"))
	args, _ := json.Marshal(m["mcpServers"].(map[string]any)["parley"].(map[string]any)["args"])
	if !strings.Contains(string(args), `"--channel"`) {
		t.Fatalf("init claude --channel: args %s lack --channel", args)
	}
	if out, _, _ := e.runIn(repo, "init", "claude", "--agent", "lead", "--channel"); !strings.Contains(out, "claude --dangerously-load-development-channels server:parley") {
		t.Errorf("init claude --channel does not print the launch command:\n%s", out)
	}
	s := standin.Anthropic(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, claude, "-p", "hello", "--output-format", "stream-json", "--verbose", "--dangerously-load-development-channels", "server:parley")
	c.Dir = repo
	c.Env = append(standin.ClaudeEnv(s, claudeHome), "PATH="+os.Getenv("PATH"), "PARLEY_HOME="+e.home)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	if !claudeConnected(out, "parley") {
		t.Errorf("Claude Code did not connect to parley mcp serve --channel:\n%s", out)
	}
}

// claudeConnected reports whether Claude Code's stream-json init line lists
// the MCP server name as connected. It reads the fields it needs and no
// more, so a field Claude Code adds to the entry does not break it.
func claudeConnected(streamJSON []byte, name string) bool {
	for _, line := range bytes.Split(streamJSON, []byte("\n")) {
		var init struct {
			Subtype    string `json:"subtype"`
			MCPServers []struct {
				Name   string `json:"name"`
				Status string `json:"status"`
			} `json:"mcp_servers"`
		}
		if json.Unmarshal(line, &init) != nil || init.Subtype != "init" {
			continue
		}
		for _, s := range init.MCPServers {
			if s.Name == name && s.Status == "connected" {
				return true
			}
		}
	}
	return false
}

// BenchmarkChannelPush measures send -> channel notification on the client:
// one agent sends with send_message, the other's --channel session gets the
// notification. The floor, in the same run, is the same send answered by a
// wait_for_message already blocked in the daemon (Parley's fastest path
// before channels), and the send call alone.
func BenchmarkChannelPush(b *testing.B) {
	e := newEnv(b)
	_, tp := channelSession(b, e, "--agent", "bob", "--workspace", "w")
	alice := e.Session(nil, "--agent", "alice", "--workspace", "w")
	carol := e.Session(nil, "--agent", "carol", "--workspace", "w")
	ctx := context.Background()
	send := func(to string) {
		res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"to": to, "content": "ping"}})
		if err != nil || res.IsError {
			b.Fatalf("send: %v %v", err, res)
		}
	}
	var push, wait, sendOnly []time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		send("bob")
		tp.next(b)
		push = append(push, time.Since(start))

		done := make(chan time.Time, 1)
		go func() {
			res, err := carol.CallTool(ctx, &mcp.CallToolParams{Name: "wait_for_message", Arguments: map[string]any{"timeout": 10}})
			if err != nil || res.IsError {
				b.Errorf("wait: %v %v", err, res)
			}
			done <- time.Now()
		}()
		time.Sleep(2 * time.Millisecond) // let the wait block in the daemon
		start = time.Now()
		send("carol")
		sendOnly = append(sendOnly, time.Since(start))
		wait = append(wait, (<-done).Sub(start))
	}
	pct := func(ds []time.Duration, p float64) time.Duration {
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[min(len(s)-1, int(float64(len(s))*p))]
	}
	for _, m := range []struct {
		name string
		ds   []time.Duration
	}{{"push", push}, {"wait", wait}, {"send", sendOnly}} {
		b.ReportMetric(float64(pct(m.ds, 0.5).Microseconds()), m.name+"-p50-us")
		b.ReportMetric(float64(pct(m.ds, 0.99).Microseconds()), m.name+"-p99-us")
	}
	b.Logf("%s", fmt.Sprintf("n=%d", b.N))
}
