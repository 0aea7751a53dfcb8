package profile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/ops"
	"github.com/parley-dev/parley/internal/profile"
)

// TestToolsGolden freezes every profile's tools/list: names, inputs and
// outputs are a contract with users' prompts. Refresh with -update.
func TestToolsGolden(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"native", "lean", "sidechat", "agentmail", "manager", "self", profile.IdentityName} {
		t.Run(p, func(t *testing.T) {
			s := e.Session(ops.Caller{Workspace: "w", Agent: "a", Profiles: []string{p}}, nil)
			res, err := s.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(res.Tools, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "tools-"+p+".json", append(got, '\n'))
		})
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test -update after checking the change):\n%s", name, got)
	}
}

func TestSidechatAndAgentmail(t *testing.T) {
	e := newEnv(t)
	sc := e.Session(ops.Caller{Workspace: "w", Profiles: []string{"sidechat"}}, nil)
	var sent struct {
		MessageID string `json:"message_id"`
	}
	if res := call(t, sc, "send_message", map[string]any{"session": "s1", "to": "scribe", "message": map[string]any{"n": 1}}, &sent); res.IsError || sent.MessageID == "" {
		t.Fatalf("sidechat send: %s", text(res))
	}
	var has struct {
		HasMessages bool `json:"has_messages"`
		Count       int  `json:"count"`
	}
	call(t, sc, "has_messages", map[string]any{"session": "s1", "agent": "scribe"}, &has)
	if !has.HasMessages || has.Count != 1 {
		t.Fatalf("has_messages: got %+v, want 1", has)
	}
	res := call(t, sc, "receive_message", map[string]any{"session": "s1", "as": "scribe", "timeout": 0}, nil)
	if got := text(res); !strings.Contains(got, `"message":{"n":1}`) || !strings.Contains(got, sent.MessageID) {
		t.Fatalf("receive_message: got %s", got)
	}
	if got := text(call(t, sc, "receive_message", map[string]any{"session": "s1", "as": "scribe", "timeout": 0}, nil)); got != "null" {
		t.Fatalf("receive_message on an empty inbox: got %s, want null", got)
	}

	am := e.Session(ops.Caller{Workspace: "w", Agent: "win1", Profiles: []string{"agentmail"}}, nil)
	if res := call(t, am, "send", map[string]any{"recipient": "win2", "message": "hello"}, nil); res.IsError || !strings.HasPrefix(text(res), "Message #") {
		t.Fatalf("agentmail send: %s", text(res))
	}
	var rpcErr *jsonrpc.Error
	_, err := am.CallTool(context.Background(), &mcp.CallToolParams{Name: "send", Arguments: map[string]any{"recipient": "win2"}})
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("agentmail send without message: got %v, want JSON-RPC %d", err, jsonrpc.CodeInvalidParams)
	}
	_, err = am.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("agentmail unknown tool: got %v, want JSON-RPC %d", err, jsonrpc.CodeMethodNotFound)
	}
}

// TestTranscriptGolden freezes a short JSON-RPC session of each profile, as
// the client sees it on the wire (ids and times normalized). Refresh with
// -update.
func TestTranscriptGolden(t *testing.T) {
	ulid := regexp.MustCompile(`[0-9A-HJKMNP-TV-Z]{26}`)
	stamp := regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	for _, tc := range []struct {
		profile string
		calls   []mcp.CallToolParams
	}{
		{"native", []mcp.CallToolParams{
			{Name: "whoami", Arguments: map[string]any{}},
			{Name: "send_message", Arguments: map[string]any{"to": "alice", "content": "note to self", "priority": "high"}},
			{Name: "check_messages", Arguments: map[string]any{"limit": 5}},
			{Name: "wait_for_message", Arguments: map[string]any{"timeout": 0}},
		}},
		{"sidechat", []mcp.CallToolParams{
			{Name: "send_message", Arguments: map[string]any{"session": "s1", "to": "scribe", "message": map[string]any{"task": "write"}}},
			{Name: "has_messages", Arguments: map[string]any{"session": "s1", "agent": "scribe"}},
			{Name: "receive_message", Arguments: map[string]any{"session": "s1", "as": "scribe", "timeout": 0}},
			{Name: "receive_message", Arguments: map[string]any{"session": "s1", "as": "scribe", "timeout": 0}},
		}},
		{"agentmail", []mcp.CallToolParams{
			{Name: "send", Arguments: map[string]any{"recipient": "alice", "message": "hello"}},
			{Name: "receive", Arguments: map[string]any{}},
			{Name: "list-recipients", Arguments: map[string]any{}},
			{Name: "status", Arguments: map[string]any{"status": "busy"}},
		}},
		{"manager", []mcp.CallToolParams{
			{Name: "list_agents", Arguments: map[string]any{}},
		}},
		{"self", []mcp.CallToolParams{
			{Name: "set_title", Arguments: map[string]any{"title": "t"}},
		}},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			e := newEnv(t)
			st, ct := mcp.NewInMemoryTransports()
			ctx := context.Background()
			ss, err := e.MCP.Connect(ctx, st, ops.Caller{Workspace: "w", Agent: "alice", Role: "dev", Profiles: []string{tc.profile}})
			if err != nil {
				t.Fatal(err)
			}
			var log syncBuffer
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
				&mcp.LoggingTransport{Transport: ct, Writer: &log}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.calls {
				cs.CallTool(ctx, &p) // errors are part of the transcript
			}
			got := log.String()
			cs.Close()
			ss.Wait()
			got = stamp.ReplaceAllString(ulid.ReplaceAllString(ordered(got), "ULID"), "TIME")
			golden(t, "transcript-"+tc.profile+".txt", []byte(got))
		})
	}
}

// ordered puts each response right after its request: the logging
// transport may log a response before the write of its request returns.
func ordered(log string) string {
	var out []string
	replies := map[string]string{}
	var order []string
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		dir, msg, _ := strings.Cut(line, ": ")
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal([]byte(msg), &m)
		switch {
		case dir == "read" && m.Method == "" && m.ID != nil:
			replies[string(m.ID)] = line
		default:
			order = append(order, line)
		}
	}
	for _, line := range order {
		out = append(out, line)
		_, msg, _ := strings.Cut(line, ": ")
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal([]byte(msg), &m)
		if r, ok := replies[string(m.ID)]; ok && strings.HasPrefix(line, "write") && m.ID != nil {
			out = append(out, r)
		}
	}
	return strings.Join(out, "\n") + "\n"
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
