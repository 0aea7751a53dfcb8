// Package standin serves scripted stand-ins for the model APIs that the real
// Claude Code, Codex and Gemini CLIs call (Anthropic's Messages API, OpenAI's
// Responses API, and Google's Gemini API in gemini.go), so that tests can run those CLIs for real with only the
// model replaced. A test gives a function that picks each reply from the
// request; the package speaks the wire protocol (JSON or SSE). Only tests
// import it.
package standin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/parley-dev/parley/internal/testenv"
)

// Server is a running stand-in.
type Server struct {
	URL string // http://127.0.0.1:PORT

	mu   sync.Mutex
	reqs [][]byte
	srv  *http.Server
}

// Requests returns the bodies of the requests served so far.
func (s *Server) Requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.reqs...)
}

// Saw reports whether any request body so far contains sub.
func (s *Server) Saw(sub string) bool {
	for _, b := range s.Requests() {
		if bytes.Contains(b, []byte(sub)) {
			return true
		}
	}
	return false
}

func serve(t testing.TB, h http.Handler) *Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{URL: "http://" + l.Addr().String()}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, b)
		s.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	})}
	go s.srv.Serve(l)
	t.Cleanup(func() { s.srv.Close() })
	return s
}

// sse writes one server-sent event and flushes it.
func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// ---- Anthropic Messages API ----

// Block is one content block of a reply: Text or ToolUse.
type Block struct {
	Type  string         `json:"type"`
	Text  string         `json:"text,omitempty"`
	ID    string         `json:"id,omitempty"`
	Name  string         `json:"name,omitempty"`
	Input map[string]any `json:"input,omitempty"`
}

// Text is a text block.
func Text(s string) Block { return Block{Type: "text", Text: s} }

// ToolUse is a tool_use block.
func ToolUse(id, name string, input map[string]any) Block {
	if input == nil {
		input = map[string]any{}
	}
	return Block{Type: "tool_use", ID: id, Name: name, Input: input}
}

// APIError is a reply that is no answer: the API refuses the request with
// HTTP 400 and the error message (Claude Code gives up on it, without
// retrying, and ends the run with an error).
func APIError(message string) Block { return Block{Type: "error", Text: message} }

// MessagesRequest is a request to POST /v1/messages.
type MessagesRequest struct {
	// Ctx ends when the client goes away: a reply that waits (a model that
	// takes its time) waits on it too.
	Ctx      context.Context `json:"-"`
	Raw      []byte
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	Tools    []json.RawMessage `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// Has reports whether the request's messages mention sub anywhere (the
// system prompt and tool definitions excluded).
func (r *MessagesRequest) Has(sub string) bool {
	for _, m := range r.Messages {
		if bytes.Contains(m.Content, []byte(sub)) || strings.Contains(unescape(m.Content), sub) {
			return true
		}
	}
	return false
}

// Offers reports whether Claude Code offers the model the tool name: in the
// request's tools, or among the deferred tools that a message lists for
// ToolSearch to load (2.1.332 defers MCP tools so; the model may call one
// by name all the same). A real model cannot call a tool it is not offered:
// Claude Code offers an MCP server's tools once the server is up.
func (r *MessagesRequest) Offers(name string) bool {
	for _, tool := range r.Tools {
		var d struct{ Name string }
		if json.Unmarshal(tool, &d) == nil && d.Name == name {
			return true
		}
	}
	for _, m := range r.Messages {
		text := unescape(m.Content)
		if _, list, ok := strings.Cut(text, "deferred tools are now available"); ok && strings.Contains(list+"\n", "\n"+name+"\n") {
			return true
		}
	}
	return false
}

// Tail is the text of the messages since the model last spoke (the whole
// conversation when it has not): the new prompt, or the results of the tool
// calls it made, with whatever Claude Code put beside them. A reply picked
// by what the tail has does not depend on what came before in the session.
func (r *MessagesRequest) Tail() string {
	var parts []string
	for _, m := range r.Messages[r.tailStart():] {
		parts = append(parts, unescape(m.Content))
	}
	return strings.Join(parts, "\n")
}

// tailStart is the index of the first message after the model's last.
func (r *MessagesRequest) tailStart() int {
	start := 0
	for i, m := range r.Messages {
		if m.Role == "assistant" {
			start = i + 1
		}
	}
	return start
}

// First is the text of the first user message.
func (r *MessagesRequest) First() string {
	if len(r.Messages) == 0 {
		return ""
	}
	return unescape(r.Messages[0].Content)
}

// ToolResult returns the text of the tool_result for tool_use id, if the
// request carries it.
func (r *MessagesRequest) ToolResult(id string) (string, bool) { return r.toolResult(id, 0) }

func (r *MessagesRequest) toolResult(id string, from int) (string, bool) {
	for _, m := range r.Messages[from:] {
		var blocks []struct {
			Type      string          `json:"type"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" && b.ToolUseID == id {
				return unescape(b.Content), true
			}
		}
	}
	return "", false
}

// unescape renders JSON content (a string or blocks) as plain text.
func unescape(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return string(raw)
	}
	var parts []string
	for _, b := range blocks {
		switch {
		case b.Text != "":
			parts = append(parts, b.Text)
		case len(b.Content) > 0:
			parts = append(parts, unescape(b.Content))
		}
	}
	return strings.Join(parts, "\n")
}

// Anthropic serves the Messages API. reply picks the content of each
// answer; nil or an empty reply answers "ok". Requests without tools
// (titles, summaries) are answered "ok" without asking reply.
func Anthropic(t testing.TB, reply func(*MessagesRequest) []Block) *Server {
	var mu sync.Mutex
	n := 0
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/v1/messages") {
			if strings.HasSuffix(r.URL.Path, "/count_tokens") {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"input_tokens":1}`)
				return
			}
			http.NotFound(w, r)
			return
		}
		req := MessagesRequest{Ctx: r.Context()}
		req.Raw, _ = io.ReadAll(r.Body)
		if err := json.Unmarshal(req.Raw, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var blocks []Block
		if len(req.Tools) > 0 && reply != nil {
			blocks = reply(&req)
		}
		if len(blocks) == 0 {
			blocks = []Block{Text("ok")}
		}
		if blocks[0].Type == "error" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]string{"type": "invalid_request_error", "message": blocks[0].Text}})
			return
		}
		mu.Lock()
		n++
		id := fmt.Sprintf("msg_%d", n)
		mu.Unlock()
		stop := "end_turn"
		for _, b := range blocks {
			if b.Type == "tool_use" {
				stop = "tool_use"
			}
		}
		usage := map[string]int{"input_tokens": 10, "output_tokens": 5}
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"id": id, "type": "message", "role": "assistant", "model": req.Model,
				"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message",
			"role": "assistant", "model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})
		for i, b := range blocks {
			switch b.Type {
			case "text":
				sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
				sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b.Text}})
			case "tool_use":
				in, _ := json.Marshal(b.Input)
				sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}})
				sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
			}
			sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		}
		sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 5}})
		sse(w, "message_stop", map[string]any{"type": "message_stop"})
	}))
}

// ---- OpenAI Responses API ----

// Item is one output item of a Responses API reply.
type Item map[string]any

// Message is an assistant message item.
func Message(text string) Item {
	return Item{"type": "message", "role": "assistant", "id": "msg_1", "content": []any{map[string]any{"type": "output_text", "text": text}}}
}

// FunctionCall is a function_call item; namespace is "" for Codex's own
// tools and "mcp__SERVER" for an MCP server's.
func FunctionCall(callID, namespace, name string, args map[string]any) Item {
	b, _ := json.Marshal(args)
	it := Item{"type": "function_call", "call_id": callID, "name": name, "arguments": string(b)}
	if namespace != "" {
		it["namespace"] = namespace
	}
	return it
}

// ResponsesRequest is a request to POST /v1/responses.
type ResponsesRequest struct {
	Ctx   context.Context `json:"-"` // ends when the client goes away
	Raw   []byte
	Input []json.RawMessage `json:"input"`
}

// Has reports whether the request's input mentions sub.
func (r *ResponsesRequest) Has(sub string) bool {
	for _, in := range r.Input {
		if bytes.Contains(in, []byte(sub)) {
			return true
		}
		var s string
		if json.Unmarshal(in, &s) == nil && strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// Tail is the text of the input since the model last spoke (all of it when
// it has not): the new prompt, or the outputs of its tool calls.
func (r *ResponsesRequest) Tail() string {
	var parts []string
	for _, in := range r.Input[r.tailStart():] {
		var it struct {
			Content json.RawMessage `json:"content"`
			Output  json.RawMessage `json:"output"`
		}
		if json.Unmarshal(in, &it) != nil {
			continue
		}
		for _, raw := range []json.RawMessage{it.Content, it.Output} {
			if len(raw) > 0 {
				parts = append(parts, unescape(raw))
			}
		}
	}
	return strings.Join(parts, "\n")
}

// tailStart is the index of the first input item after the model's last.
func (r *ResponsesRequest) tailStart() int {
	start := 0
	for i, in := range r.Input {
		var it struct {
			Type string `json:"type"`
			Role string `json:"role"`
		}
		json.Unmarshal(in, &it)
		if it.Role == "assistant" || it.Type == "function_call" || it.Type == "custom_tool_call" {
			start = i + 1
		}
	}
	return start
}

// Output returns the output of the function call (or the freeform tool call,
// such as apply_patch) callID, as text, if the request carries it.
func (r *ResponsesRequest) Output(callID string) (string, bool) { return r.output(callID, 0) }

func (r *ResponsesRequest) output(callID string, from int) (string, bool) {
	for _, in := range r.Input[from:] {
		var it struct {
			Type   string          `json:"type"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
		}
		if json.Unmarshal(in, &it) != nil || it.Type != "function_call_output" && it.Type != "custom_tool_call_output" || it.CallID != callID {
			continue
		}
		var s string
		if json.Unmarshal(it.Output, &s) == nil {
			return s, true
		}
		var parts []struct {
			Text string `json:"text"`
		}
		json.Unmarshal(it.Output, &parts)
		var texts []string
		for _, p := range parts {
			texts = append(texts, p.Text)
		}
		return strings.Join(texts, "\n"), true
	}
	return "", false
}

// OpenAI serves the Responses API (point Codex at URL+"/v1" through a custom
// model_provider). reply picks the output items; nil or empty answers "ok".
func OpenAI(t testing.TB, reply func(*ResponsesRequest) []Item) *Server {
	var mu sync.Mutex
	n := 0
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
			http.NotFound(w, r)
			return
		}
		req := ResponsesRequest{Ctx: r.Context()}
		req.Raw, _ = io.ReadAll(r.Body)
		if err := json.Unmarshal(req.Raw, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var items []Item
		if reply != nil {
			items = reply(&req)
		}
		if len(items) == 0 {
			items = []Item{Message("ok")}
		}
		mu.Lock()
		n++
		id := fmt.Sprintf("resp_%d", n)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
		for i, it := range items {
			sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": i, "item": it})
		}
		sse(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": id,
			"usage": map[string]any{"input_tokens": 10, "input_tokens_details": nil, "output_tokens": 5, "output_tokens_details": nil, "total_tokens": 15}}})
	}))
}

// EnvNPM names a directory whose node_modules has the client CLIs to test
// in place of test/npm's (scripts/newest-clients installs the newest
// published versions in one).
const EnvNPM = "PARLEY_TEST_NPM"

// CLI returns the path of a real client CLI (claude, codex, gemini) that
// scripts/test-deps installs under test/npm, or under $PARLEY_TEST_NPM when
// set. It skips the test when it is missing, and fails it on CI.
func CLI(t testing.TB, name string) string {
	t.Helper()
	npm := os.Getenv(EnvNPM)
	if npm == "" {
		dir, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				t.Fatalf("no go.mod above the test's directory")
			}
			dir = parent
		}
		npm = filepath.Join(dir, "test", "npm")
	}
	p := filepath.Join(npm, "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed in %s: run scripts/test-deps", name, npm)
		}
		t.Skipf("%s is not installed in %s: run scripts/test-deps", name, npm)
	}
	return p
}

// ClaudeEnv is the environment that points the real Claude Code at s, with
// its state in dir: no login, no updates, no traffic but the stand-in's.
func ClaudeEnv(s *Server, dir string) []string {
	return []string{
		"HOME=" + dir, "CLAUDE_CONFIG_DIR=" + filepath.Join(dir, ".claude-config"),
		"ANTHROPIC_BASE_URL=" + s.URL, "ANTHROPIC_API_KEY=dummy-key-for-tests",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		testenv.GoRace(), // for the parley hooks and servers it starts
	}
}

// CodexArgs are the flags that point `codex exec` at s (a custom model
// provider: plain HTTP, no WebSocket attempts).
func CodexArgs(s *Server) []string {
	return append([]string{"-m", "gpt-5.5"}, CodexConfig(s)...)
}

// CodexConfig are the -c overrides of CodexArgs, which codex takes before its
// subcommand too.
func CodexConfig(s *Server) []string {
	return []string{
		"-c", `model="gpt-5.5"`,
		"-c", `model_provider="standin"`, "-c", `model_providers.standin.name="standin"`,
		"-c", `model_providers.standin.wire_api="responses"`,
		"-c", fmt.Sprintf("model_providers.standin.base_url=%q", s.URL+"/v1"),
	}
}

// Providers is the provider tables of a Parley config.toml whose managed
// agents run the real CLIs from test/npm, pointed at the stand-ins (either
// may be nil: its providers are left out), with the clients' state under
// dir (Claude Code's HOME and CLAUDE_CONFIG_DIR, Codex's CODEX_HOME =
// CodexHome(dir)):
//
//	claude      Claude Code, one process across turns (Parley's default)
//	perturn     Claude Code, one process per turn (steer = false)
//	codex       codex exec, one process per turn (Parley's default for Codex)
//	codexsteer  codex app-server, one process across turns (steer = true)
func Providers(t testing.TB, anthropic, openai *Server, dir string) string {
	t.Helper()
	var b strings.Builder
	if anthropic != nil {
		claude := CLI(t, "claude")
		for _, name := range []string{"claude", "perturn"} {
			fmt.Fprintf(&b, "[providers.%s]\nkind = \"claude\"\ncommand = %q\n", name, claude)
			if name == "perturn" {
				b.WriteString("steer = false\n")
			}
			fmt.Fprintf(&b, "[providers.%s.env]\n", name)
			if os.Geteuid() == 0 {
				// As root Claude Code refuses bypassPermissions outside a
				// sandbox it is told of.
				b.WriteString("IS_SANDBOX = \"1\"\n")
			}
			for _, kv := range ClaudeEnv(anthropic, dir) {
				k, v, _ := strings.Cut(kv, "=")
				fmt.Fprintf(&b, "%s = %q\n", k, v)
			}
		}
	}
	if openai != nil {
		codex := CLI(t, "codex")
		var args []string
		for _, a := range CodexConfig(openai) {
			args = append(args, strconv.Quote(a))
		}
		for _, name := range []string{"codex", "codexsteer"} {
			fmt.Fprintf(&b, "[providers.%s]\nkind = \"codex\"\nsteer = %v\ncommand = %q\nargs = [%s]\n[providers.%s.env]\nCODEX_HOME = %q\n",
				name, name == "codexsteer", codex, strings.Join(args, ", "), name, CodexHome(dir))
		}
	}
	return b.String()
}

// CodexHome is the CODEX_HOME that Providers gives Codex, made if missing.
func CodexHome(dir string) string {
	p := filepath.Join(dir, ".codex")
	os.MkdirAll(p, 0o700)
	return p
}

// ---- one script for both APIs ----

// Query is what a script sees of a request to either stand-in.
type Query interface {
	// Context ends when the client goes away: a turn that waits waits on it.
	Context() context.Context
	// Has reports whether the conversation mentions sub.
	Has(sub string) bool
	// Tail is the conversation since the model last spoke.
	Tail() string
	// Result is the output of the tool call id, if it came since the model
	// last spoke.
	Result(id string) (string, bool)
}

func (r *MessagesRequest) Context() context.Context { return r.Ctx }

// Result is the tool_result for id in the tail (see Tail).
func (r *MessagesRequest) Result(id string) (string, bool) { return r.toolResult(id, r.tailStart()) }

func (r *ResponsesRequest) Context() context.Context { return r.Ctx }

// Result is the output of call id in the tail (see Tail).
func (r *ResponsesRequest) Result(id string) (string, bool) { return r.output(id, r.tailStart()) }

// Turn is what a scripted model does next, in terms both clients share: an
// answer, or a call of an MCP server's tool (ID names the call).
type Turn struct {
	Text             string
	ID, Server, Tool string
	Args             map[string]any
}

// Say is a turn that answers text.
func Say(text string) *Turn { return &Turn{Text: text} }

// Call is a turn that calls tool of the agent's MCP server (such as
// "parley" or "parley-self").
func Call(id, server, tool string, args map[string]any) *Turn {
	return &Turn{ID: id, Server: server, Tool: tool, Args: args}
}

// Both serves one script as the Messages API (for Claude Code) and as the
// Responses API (for Codex). A nil turn answers "ok".
func Both(t testing.TB, script func(Query) *Turn) (anthropic, openai *Server) {
	anthropic = Anthropic(t, func(r *MessagesRequest) []Block {
		switch turn := script(r); {
		case turn == nil:
			return nil
		case turn.Tool != "":
			return []Block{ToolUse(turn.ID, "mcp__"+turn.Server+"__"+turn.Tool, turn.Args)}
		default:
			return []Block{Text(turn.Text)}
		}
	})
	openai = OpenAI(t, func(r *ResponsesRequest) []Item {
		switch turn := script(r); {
		case turn == nil:
			return nil
		case turn.Tool != "":
			return []Item{FunctionCall(turn.ID, "mcp__"+turn.Server, turn.Tool, turn.Args)}
		default:
			return []Item{Message(turn.Text)}
		}
	})
	return anthropic, openai
}
