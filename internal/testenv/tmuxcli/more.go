package tmuxcli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/parley-dev/parley/internal/testenv"
	"github.com/parley-dev/parley/internal/testenv/standin"
)

// mergeJSON sets keys in the JSON object file path (made if missing),
// keeping what else it has.
func (s *Server) mergeJSON(path string, keys map[string]any) {
	s.t.Helper()
	m := map[string]any{}
	if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
		if err := json.Unmarshal(b, &m); err != nil {
			s.t.Fatalf("%s: %v", path, err)
		}
	}
	var merge func(dst, src map[string]any)
	merge = func(dst, src map[string]any) {
		for k, v := range src {
			if sv, ok := v.(map[string]any); ok {
				if dv, ok := dst[k].(map[string]any); ok {
					merge(dv, sv)
					continue
				}
			}
			dst[k] = v
		}
	}
	merge(m, keys)
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		s.t.Fatal(err)
	}
}

// Qwen is an interactive Qwen Code session.
type Qwen struct {
	*Pane
	Home string // HOME of the session; QWEN_HOME is Home/.qwen
}

// QwenOptions configure StartQwen.
type QwenOptions struct {
	Dir  string   // the project directory (required)
	Env  []string // more environment (PATH is passed on)
	Home string   // HOME; default a temporary dir
}

// StartQwen starts Qwen Code (from test/npm) at its prompt, pointed at
// the chat-completions stand-in model (OPENAI_BASE_URL), approval mode
// default, no folder trust prompt, no update check. The user's settings
// ($HOME/.qwen/settings.json) keep what they have (parley init qwen's).
func (s *Server) StartQwen(name string, model *standin.Server, o QwenOptions) *Qwen {
	s.t.Helper()
	bin := standin.CLI(s.t, "qwen")
	home := o.Home
	if home == "" {
		home = s.t.TempDir()
	}
	s.mergeJSON(filepath.Join(home, ".qwen", "settings.json"), map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "openai"}, "folderTrust": map[string]any{"enabled": false}},
		"model":    map[string]any{"name": "standin"},
		"tools":    map[string]any{"approvalMode": "default"},
		"general":  map[string]any{"enableAutoUpdate": false, "disableUpdateNag": true},
		"privacy":  map[string]any{"usageStatisticsEnabled": false},
		"ui":       map[string]any{"autoModeAcknowledged": true},
	})
	env := append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + s.dir, testenv.GoRace(),
		"OPENAI_API_KEY=dummy-key-for-tests", "OPENAI_BASE_URL=" + model.URL + "/v1", "OPENAI_MODEL=standin"}, o.Env...)
	q := &Qwen{Home: home}
	q.Pane = s.Start(name, o.Dir, env, bin)
	s.t.Cleanup(q.stop)
	// A project's MCP server (parley init qwen's) waits for the person's
	// approval at the first start: approve it, as a person does once.
	q.WaitScreenAny(90*time.Second, "Type your message", "Approve this server")
	if strings.Contains(q.Screen(), "Approve this server") {
		q.Keys("Enter")
	}
	q.WaitScreen(60*time.Second, "Type your message")
	return q
}

// Record is the path of the session's registry record, waiting for it.
func (q *Qwen) Record() string {
	q.s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ms, _ := filepath.Glob(filepath.Join(q.Home, ".qwen", "sessions", "*.json"))
		if len(ms) > 0 {
			return ms[len(ms)-1]
		}
		if time.Now().After(deadline) {
			q.s.t.Fatalf("qwen wrote no session record:\n%s", q.Screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Opencode is an interactive opencode TUI.
type Opencode struct {
	*Pane
	Home string // HOME of the session (its config, data and state under it)
}

// OpencodeOptions configure StartOpencode.
type OpencodeOptions struct {
	Dir  string   // the project directory (required); its opencode.json is parley init's
	Env  []string // more environment (PATH is passed on)
	Home string   // HOME; default a temporary dir
}

// StartOpencode starts opencode (from test/npm) at its prompt, its model
// the chat-completions stand-in, serving its API on a free loopback port
// (--port 0) as `parley init opencode` tells a person to start it (a
// provider of the user's config, through
// @ai-sdk/openai-compatible), with no update, models or share traffic.
func (s *Server) StartOpencode(name string, model *standin.Server, o OpencodeOptions) *Opencode {
	s.t.Helper()
	bin := standin.CLI(s.t, "opencode")
	home := o.Home
	if home == "" {
		home = s.t.TempDir()
	}
	s.mergeJSON(filepath.Join(home, ".config", "opencode", "opencode.json"), map[string]any{
		"provider": map[string]any{"standin": map[string]any{"npm": "@ai-sdk/openai-compatible", "name": "standin",
			"options": map[string]any{"baseURL": model.URL + "/v1", "apiKey": "dummy-key-for-tests"},
			"models":  map[string]any{"standin": map[string]any{"name": "standin"}}}},
		"model": "standin/standin", "autoupdate": false, "share": "disabled",
	})
	env := append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + s.dir, testenv.GoRace(),
		"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_SHARE=1"}, o.Env...)
	c := &Opencode{Home: home}
	// --port: the TUI serves its API (the door) only when told a port;
	// 0 is 4096, or another free one (parley init opencode says so).
	c.Pane = s.Start(name, o.Dir, env, bin, "--port", "0")
	s.t.Cleanup(c.stop)
	c.WaitScreen(180*time.Second, "Ask anything") // a first start migrates its database: slow on a loaded machine
	return c
}
