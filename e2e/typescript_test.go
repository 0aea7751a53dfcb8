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
	dir, _ := filepath.Abs("../test/ts")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the TypeScript SDK is not installed in %s: run scripts/test-deps", dir)
		}
		t.Skipf("the TypeScript SDK is not installed in %s: run scripts/test-deps", dir)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found: %v", err)
	}
	e := newEnv(t)
	c := exec.Command(node, "interop.mjs", bin, "ts-workspace")
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
