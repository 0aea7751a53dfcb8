package standin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/parley-dev/parley/internal/testenv"
)

// ---- Gemini API (generativelanguage v1beta) ----
//
// The Gemini CLI (0.61.0) calls the Gemini API at $GOOGLE_GEMINI_BASE_URL
// with an API key (GeminiEnv): POST /v1beta/models/MODEL:streamGenerateContent
// ?alt=sse for the session's turns, and :generateContent for side requests
// (with the default model "auto", a classifier that routes each turn). The
// stand-in also answers :countTokens and GET /v1beta/models, which the
// bundle can call. A function call is a part
// {"functionCall":{"id","name","args"}}; the CLI answers it in the next
// request with a user part {"functionResponse":{"id","name","response"}}.
// An MCP server's tool is offered as "mcp_SERVER_TOOL" (GeminiTool).

// Part is one part of a Gemini reply: GeminiText or GeminiCall.
type Part map[string]any

// GeminiText is a text part.
func GeminiText(s string) Part { return Part{"text": s} }

// GeminiCall is a functionCall part: name is the tool as the CLI offers it
// (its own, such as "run_shell_command", or GeminiTool's for an MCP tool).
func GeminiCall(id, name string, args map[string]any) Part {
	if args == nil {
		args = map[string]any{}
	}
	return Part{"functionCall": map[string]any{"id": id, "name": name, "args": args}}
}

// GeminiTool is the name the Gemini CLI gives tool of MCP server server.
func GeminiTool(server, tool string) string {
	name := "mcp_" + server + "_" + tool
	return strings.Map(func(r rune) rune {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.:", r)) {
			return r
		}
		return '_'
	}, name)
}

// GenerateRequest is a request to :generateContent or
// :streamGenerateContent.
type GenerateRequest struct {
	Ctx    context.Context `json:"-"` // ends when the client goes away
	Raw    []byte          `json:"-"`
	Model  string          `json:"-"` // from the path
	Stream bool            `json:"-"` // streamGenerateContent
	// Contents is the conversation: roles "user" and "model".
	Contents []struct {
		Role  string            `json:"role"`
		Parts []json.RawMessage `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

// Has reports whether the conversation mentions sub (the system
// instruction and tool declarations excluded).
func (r *GenerateRequest) Has(sub string) bool {
	for _, c := range r.Contents {
		for _, p := range c.Parts {
			if strings.Contains(partText(p), sub) {
				return true
			}
		}
	}
	return false
}

// Offers reports whether the request declares the function name.
func (r *GenerateRequest) Offers(name string) bool {
	for _, t := range r.Tools {
		for _, f := range t.FunctionDeclarations {
			if f.Name == name {
				return true
			}
		}
	}
	return false
}

// Tail is the text of the conversation since the model last spoke (all of
// it when it has not): the prompt, or the responses to its function calls.
func (r *GenerateRequest) Tail() string {
	var parts []string
	for _, c := range r.Contents[r.tailStart():] {
		for _, p := range c.Parts {
			parts = append(parts, partText(p))
		}
	}
	return strings.Join(parts, "\n")
}

func (r *GenerateRequest) tailStart() int {
	start := 0
	for i, c := range r.Contents {
		if c.Role == "model" {
			start = i + 1
		}
	}
	return start
}

// First is the text of the first user content.
func (r *GenerateRequest) First() string {
	for _, c := range r.Contents {
		if c.Role == "user" {
			var parts []string
			for _, p := range c.Parts {
				parts = append(parts, partText(p))
			}
			return strings.Join(parts, "\n")
		}
	}
	return ""
}

// Context ends when the client goes away.
func (r *GenerateRequest) Context() context.Context { return r.Ctx }

// Response returns the response to function call id, as text, if the
// request carries it.
func (r *GenerateRequest) Response(id string) (string, bool) { return r.response(id, 0) }

// Result is the response to call id in the tail (see Tail).
func (r *GenerateRequest) Result(id string) (string, bool) { return r.response(id, r.tailStart()) }

func (r *GenerateRequest) response(id string, from int) (string, bool) {
	for _, c := range r.Contents[from:] {
		for _, p := range c.Parts {
			var fr struct {
				FunctionResponse *struct {
					ID       string          `json:"id"`
					Response json.RawMessage `json:"response"`
				} `json:"functionResponse"`
			}
			if json.Unmarshal(p, &fr) == nil && fr.FunctionResponse != nil && fr.FunctionResponse.ID == id {
				return responseText(fr.FunctionResponse.Response), true
			}
		}
	}
	return "", false
}

// partText renders one part as text: its text, or a function response's
// output.
func partText(raw json.RawMessage) string {
	var p struct {
		Text             string `json:"text"`
		FunctionResponse *struct {
			Response json.RawMessage `json:"response"`
		} `json:"functionResponse"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return string(raw)
	}
	if p.FunctionResponse != nil {
		return responseText(p.FunctionResponse.Response)
	}
	return p.Text
}

// responseText is a functionResponse's response as text: the CLI puts a
// tool's output under "output" (or its failure under "error").
func responseText(raw json.RawMessage) string {
	var r struct {
		Output json.RawMessage `json:"output"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return string(raw)
	}
	for _, v := range []json.RawMessage{r.Output, r.Error} {
		if len(v) > 0 {
			return unescape(v)
		}
	}
	return string(raw)
}

// Gemini serves the Gemini API. reply picks the parts of each answer; nil
// or an empty reply answers "ok". Requests without tools (the CLI's side
// requests) are answered "ok" without asking reply.
func Gemini(t testing.TB, reply func(*GenerateRequest) []Part) *Server {
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimPrefix(r.URL.Path, "/v1beta/")
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet && path == "models" {
			io.WriteString(w, `{"models":[]}`)
			return
		}
		model, method, ok := strings.Cut(strings.TrimPrefix(path, "models/"), ":")
		if r.Method != http.MethodPost || !ok || !strings.HasPrefix(path, "models/") {
			http.NotFound(w, r)
			return
		}
		switch method {
		case "countTokens":
			io.WriteString(w, `{"totalTokens":1}`)
			return
		case "generateContent", "streamGenerateContent":
		default:
			http.NotFound(w, r)
			return
		}
		req := GenerateRequest{Ctx: r.Context(), Model: model, Stream: method == "streamGenerateContent"}
		req.Raw, _ = io.ReadAll(r.Body)
		if err := json.Unmarshal(req.Raw, &req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": 400, "message": err.Error(), "status": "INVALID_ARGUMENT"}})
			return
		}
		var parts []Part
		if len(req.Tools) > 0 && reply != nil {
			parts = reply(&req)
		}
		if len(parts) == 0 {
			parts = []Part{GeminiText("ok")}
		}
		resp := map[string]any{
			"candidates": []any{map[string]any{
				"content":      map[string]any{"role": "model", "parts": parts},
				"finishReason": "STOP",
				"index":        0,
			}},
			"usageMetadata": map[string]int{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
			"modelVersion":  model,
		}
		if !req.Stream {
			json.NewEncoder(w).Encode(resp)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		b, _ := json.Marshal(resp)
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}))
}

// GeminiModel is the model GeminiEnv's settings name: one named model
// keeps the CLI from asking a classifier which model to route a turn to.
const GeminiModel = "gemini-2.5-flash"

// GeminiEnv is the environment that points the real Gemini CLI at s, with
// its state (settings, extensions, trusted folders) under home, which it
// prepares: an API key, a fixed model, and no traffic but the stand-in's
// (usage statistics and telemetry off; no update checks). Proxy variables
// pointing at a closed loopback port catch any other call the CLI makes
// through its HTTP stack (a Trap's URL); give proxy "" to leave them out.
// One call gets past the settings: `gemini extensions install` reports the
// install to Google's usage statistics (CONNECT play.googleapis.com:443),
// since 0.61.0's extension manager ignores privacy.usageStatisticsEnabled.
func GeminiEnv(t testing.TB, s *Server, home, proxy string) []string {
	t.Helper()
	settings := map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		"model":     map[string]any{"name": GeminiModel},
	}
	b, _ := json.MarshalIndent(settings, "", "  ")
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "GOOGLE_GEMINI_BASE_URL=" + s.URL, "GEMINI_API_KEY=dummy", testenv.GoRace()}
	if proxy != "" {
		env = append(env, "HTTPS_PROXY="+proxy, "HTTP_PROXY="+proxy, "NO_PROXY=127.0.0.1,localhost")
	}
	return env
}

// Trap is a loopback HTTP proxy that refuses every request and records
// where it was going: a client whose proxy is the trap (GeminiEnv's proxy)
// shows each call it makes beyond loopback, which a test can then forbid.
type Trap struct {
	URL string

	mu    sync.Mutex
	hosts []string
}

// NewTrap starts a trap, closed when the test ends.
func NewTrap(t testing.TB) *Trap {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &Trap{URL: "http://" + l.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if r.Method != http.MethodConnect && r.URL.Host != "" {
			host = r.URL.Host
		}
		tr.mu.Lock()
		tr.hosts = append(tr.hosts, r.Method+" "+host)
		tr.mu.Unlock()
		http.Error(w, "no traffic beyond loopback in tests", http.StatusForbidden)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return tr
}

// Hosts returns "METHOD host" for each request the trap refused.
func (tr *Trap) Hosts() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.hosts...)
}

// A Gemini request is a Query too, for scripts shared across the clients.
var _ Query = (*GenerateRequest)(nil)
