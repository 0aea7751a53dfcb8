package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readmeRepo is the repository path README's HTTP examples name.
const readmeRepo = "/home/you/src/myrepo"

// TestREADMEHTTPExamples runs the HTTP client configurations of README.md
// (Claude Code's and Cursor's "headers") as written, with only the token,
// the port and the repository's path put in: a session with those headers
// is in the workspace that the CLI and `parley mcp serve` use in that
// repository, so what it sends reaches its agents there.
func TestREADMEHTTPExamples(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	repo := initRepo(t, e)
	addr, token := e.startTCP()
	var configs []map[string]any
	for _, m := range regexp.MustCompile("(?s)```json\n(\\{.*?\\})\n```").FindAllStringSubmatch(string(b), -1) {
		var c struct {
			MCPServers map[string]map[string]any `json:"mcpServers"`
		}
		if json.Unmarshal([]byte(m[1]), &c) == nil {
			if p, ok := c.MCPServers["parley"]; ok && p["url"] != nil {
				configs = append(configs, p)
			}
		}
	}
	if len(configs) < 2 {
		t.Fatalf("README has %d HTTP client configurations, want Claude Code's and Cursor's", len(configs))
	}
	fill := strings.NewReplacer("${PARLEY_TOKEN}", token, "<contents of ~/.parley/token>", token,
		"127.0.0.1:7474", addr, readmeRepo, repo)
	for i, cfg := range configs {
		h := http.Header{}
		heads, _ := cfg["headers"].(map[string]any)
		for k, v := range heads {
			h.Set(k, fill.Replace(v.(string)))
		}
		if h.Get("Parley-Workspace") != repo {
			t.Errorf("README's configuration %d: Parley-Workspace %q, want the repository's path %s", i, heads["Parley-Workspace"], readmeRepo)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		hc := &http.Client{Transport: &headerTransport{h: h, base: http.DefaultTransport}}
		s, err := mcp.NewClient(&mcp.Implementation{Name: "readme", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: fill.Replace(cfg["url"].(string)), HTTPClient: hc},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		cancel()
		if err != nil {
			t.Fatalf("README's configuration %d: connect: %v", i, err)
		}
		text := "from README's configuration " + h.Get("Parley-Agent")
		mustCall(t, s, "send_message", map[string]any{"to": "bob", "content": text}, nil)
		s.Close()
		if out, errs, code := e.runIn(repo, "inbox", "--agent", "bob", "--peek"); code != 0 || !strings.Contains(out, text) {
			t.Errorf("bob's inbox in the repository: exit %d %s %s, want %q", code, out, errs, text)
		}
	}
}
