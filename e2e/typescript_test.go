package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTypeScriptSDK drives parley mcp serve with the official TypeScript SDK,
// a second MCP implementation. scripts/test-deps installs it.
func TestTypeScriptSDK(t *testing.T) {
	dir := tsDir(t)
	e := newEnv(t)
	c := exec.Command("node", "interop.mjs", bin, "ts-workspace")
	c.Dir = dir
	c.Env = e.environ()
	stderr := &syncBuffer{}
	c.Stderr = stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("node interop.mjs: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	var got struct {
		Server struct{ Name string }
		Tools  []string
		Sent   struct {
			Status     string   `json:"status"`
			MessageID  string   `json:"message_id"`
			Recipients []string `json:"recipients"`
		}
		Received     waitResult
		ReceivedText string
		Progress     int
		BadIsError   bool
		BadText      string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	if got.Server.Name != "parley" {
		t.Errorf("server name: got %q", got.Server.Name)
	}
	for _, want := range seedTools {
		if !slices.Contains(got.Tools, want) {
			t.Errorf("TypeScript client's tools/list lacks %s", want)
		}
	}
	if got.Sent.Status != "delivered" || !slices.Equal(got.Sent.Recipients, []string{"bob"}) {
		t.Errorf("send: got %+v", got.Sent)
	}
	m := got.Received.Message
	if got.Received.Status != "message_received" || m == nil || m.MessageID != got.Sent.MessageID || m.From != "alice" || m.Content != "hello from TypeScript" || m.Priority != "high" {
		t.Errorf("received: got %+v", got.Received)
	}
	if !strings.Contains(got.ReceivedText, got.Sent.MessageID) {
		t.Errorf("text content %q lacks the message id", got.ReceivedText)
	}
	if !got.BadIsError || !strings.Contains(got.BadText, "invalid priority") {
		t.Errorf("bad priority: isError %v, text %q", got.BadIsError, got.BadText)
	}
}

// TestTypeScriptChannel drives `parley mcp serve --channel` with the official
// TypeScript SDK in Claude Code's place: its capabilities, a message pushed
// as a channel notification with its meta, and a relayed permission prompt
// decided in Parley and sent back.
func TestTypeScriptChannel(t *testing.T) {
	dir := tsDir(t)
	e := newEnv(t)
	c := exec.Command("node", "channel.mjs", bin, "ts-channel")
	c.Dir, c.Env = dir, e.environ()
	stderr := &syncBuffer{}
	c.Stderr = stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("node channel.mjs: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	var got struct {
		Experimental map[string]any
		SentID       string
		Push         channelParams
		Request      struct {
			AgentID   string `json:"agent_id"`
			Source    string `json:"source"`
			ToolName  string `json:"tool_name"`
			ToolUseID string `json:"tool_use_id"`
		}
		Verdict struct {
			RequestID string `json:"request_id"`
			Behavior  string `json:"behavior"`
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	if _, ok := got.Experimental["claude/channel"]; !ok {
		t.Errorf("capabilities: no claude/channel in %v", got.Experimental)
	}
	if _, ok := got.Experimental["claude/channel/permission"]; !ok {
		t.Errorf("capabilities: no claude/channel/permission in %v", got.Experimental)
	}
	if p := got.Push; p.Content != "build is red" || p.Meta["from"] != "alice" || p.Meta["message_id"] != got.SentID || p.Meta["priority"] != "high" {
		t.Errorf("push: got %+v, want the message from alice with its id %s and priority", p, got.SentID)
	}
	if r := got.Request; r.AgentID != "bob" || r.Source != "channel" || r.ToolName != "Bash" || r.ToolUseID != "abcde" {
		t.Errorf("relayed request: got %+v", r)
	}
	if got.Verdict.RequestID != "abcde" || got.Verdict.Behavior != "allow" {
		t.Errorf("verdict: got %+v, want allow for abcde", got.Verdict)
	}
}

// tsDir is test/ts, where scripts/test-deps installs the TypeScript SDK; it
// skips the test when the SDK or node is missing, and fails it on CI.
func tsDir(t *testing.T) string {
	t.Helper()
	dir, _ := filepath.Abs("../test/ts")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the TypeScript SDK is not installed in %s: run scripts/test-deps", dir)
		}
		t.Skipf("the TypeScript SDK is not installed in %s: run scripts/test-deps", dir)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node not found: %v", err)
	}
	return dir
}
