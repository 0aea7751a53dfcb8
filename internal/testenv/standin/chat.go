package standin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// ---- OpenAI Chat Completions API (Qwen Code, opencode) ----

// ChatRequest is a request to POST /v1/chat/completions.
type ChatRequest struct {
	Ctx      context.Context `json:"-"` // ends when the client goes away
	Raw      []byte
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	Tools    []json.RawMessage `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// Has reports whether the request's messages mention sub (the system
// prompt excluded).
func (r *ChatRequest) Has(sub string) bool {
	for _, m := range r.Messages {
		if m.Role != "system" && strings.Contains(unescape(m.Content), sub) {
			return true
		}
	}
	return false
}

// Tail is the text of the messages since the model last spoke (all of
// them but the system prompt when it has not).
func (r *ChatRequest) Tail() string {
	start := 0
	for i, m := range r.Messages {
		if m.Role == "assistant" {
			start = i + 1
		}
	}
	var parts []string
	for _, m := range r.Messages[start:] {
		if m.Role != "system" {
			parts = append(parts, unescape(m.Content))
		}
	}
	return strings.Join(parts, "\n")
}

// Chat serves the Chat Completions API (point the client's OpenAI-
// compatible provider at URL+"/v1"), streamed as chat.completion.chunk
// events when asked, and GET /v1/models. reply picks each answer's text;
// nil or "" answers "ok". Requests without tools (titles, summaries) are
// answered "ok" without asking reply.
func Chat(t testing.TB, reply func(*ChatRequest) string) *Server {
	var mu sync.Mutex
	n := 0
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[{"id":"standin","object":"model","owned_by":"standin"}]}`)
			return
		}
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.NotFound(w, r)
			return
		}
		req := ChatRequest{Ctx: r.Context()}
		req.Raw, _ = io.ReadAll(r.Body)
		if err := json.Unmarshal(req.Raw, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		text := ""
		if len(req.Tools) > 0 && reply != nil {
			text = reply(&req)
		}
		if text == "" {
			text = "ok"
		}
		mu.Lock()
		n++
		id := fmt.Sprintf("chatcmpl-%d", n)
		mu.Unlock()
		created := time.Now().Unix()
		usage := map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "created": created, "model": req.Model,
				"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
				"usage":   usage})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta map[string]any, finish any, withUsage bool) {
			c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
			if withUsage {
				c["usage"] = usage
			}
			var b bytes.Buffer
			json.NewEncoder(&b).Encode(c)
			fmt.Fprintf(w, "data: %s\n\n", bytes.TrimSpace(b.Bytes()))
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
		chunk(map[string]any{"role": "assistant", "content": text}, nil, false)
		chunk(map[string]any{}, "stop", true)
		io.WriteString(w, "data: [DONE]\n\n")
	}))
}
