package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	return m
}

// initRepo makes a git repository (a .git directory is enough for parley).
func initRepo(t *testing.T, e *env) string {
	dir := filepath.Join(e.home, "repo")
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	return dir
}

func (e *env) runIn(dir string, args ...string) (string, string, int) {
	c := e.Cmd(args...)
	c.Dir = dir
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if err != nil {
		code = c.ProcessState.ExitCode()
	}
	return out.String(), errb.String(), code
}

func TestInitClaudeMergesAndIsIdempotent(t *testing.T) {
	e := newEnv(t)
	repo := initRepo(t, e)
	writeFile(t, filepath.Join(repo, ".mcp.json"), `{"mcpServers":{"other":{"command":"x","args":["1"],"env":{"K":"v"}}},"extra":{"n":1.50}}`)
	writeFile(t, filepath.Join(repo, ".claude", "settings.json"),
		`{"permissions":{"allow":["Bash(ls)"]},"hooks":{"Stop":[{"hooks":[{"type":"command","command":"echo mine"}]}]},"model":"opus"}`)

	// Without a terminal and without --yes: refuse, write nothing, show the diff.
	before, _ := os.ReadFile(filepath.Join(repo, ".mcp.json"))
	out, errs, code := e.runIn(repo, "init", "claude", "--agent", "alice", "--role", "dev")
	if code == 0 || !strings.Contains(errs, "--yes") {
		t.Errorf("no terminal, no --yes: got exit %d, stderr %q; want a refusal naming --yes", code, errs)
	}
	if !strings.Contains(out, "+++ b/.mcp.json") || !strings.Contains(out, `+      "command": `) {
		t.Errorf("no diff shown:\n%s", out)
	}
	if after, _ := os.ReadFile(filepath.Join(repo, ".mcp.json")); string(after) != string(before) {
		t.Errorf("refused run changed .mcp.json:\n%s", after)
	}
	if _, err := os.Stat(filepath.Join(repo, ".claude", "agents", "message-listener.md")); err == nil {
		t.Errorf("refused run wrote the sub-agent")
	}

	out, errs, code = e.runIn(repo, "init", "claude", "--agent", "alice", "--role", "dev", "--yes")
	if code != 0 {
		t.Fatalf("init --yes: exit %d\n%s\n%s", code, out, errs)
	}
	mcpJSON := readJSON(t, filepath.Join(repo, ".mcp.json"))
	servers := mcpJSON["mcpServers"].(map[string]any)
	other := servers["other"].(map[string]any)
	if other["command"] != "x" || other["env"].(map[string]any)["K"] != "v" || mcpJSON["extra"].(map[string]any)["n"] != 1.5 {
		t.Errorf("the user's settings were not kept: %v", mcpJSON)
	}
	p := servers["parley"].(map[string]any)
	args, _ := json.Marshal(p["args"])
	if p["type"] != "stdio" || p["command"] != bin || string(args) != `["mcp","serve","--agent","alice","--role","dev"]` {
		t.Errorf("parley server: got %v, want stdio %s mcp serve --agent alice --role dev", p, bin)
	}

	settings := readJSON(t, filepath.Join(repo, ".claude", "settings.json"))
	if settings["model"] != "opus" || settings["permissions"] == nil {
		t.Errorf("settings lost the user's keys: %v", settings)
	}
	hooks := settings["hooks"].(map[string]any)
	for _, ev := range []string{"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd"} {
		b, _ := json.Marshal(hooks[ev])
		if !strings.Contains(string(b), "hook claude "+ev+" --agent alice") {
			t.Errorf("hooks.%s: got %s, want parley's hook", ev, b)
		}
	}
	if b, _ := json.Marshal(hooks["Stop"]); !strings.Contains(string(b), "echo mine") {
		t.Errorf("the user's Stop hook was dropped: %s", b)
	}
	agent, err := os.ReadFile(filepath.Join(repo, ".claude", "agents", "message-listener.md"))
	if err != nil || !strings.Contains(string(agent), "name: message-listener") || !strings.Contains(string(agent), "wait_for_message") {
		t.Errorf("message-listener sub-agent: %v\n%s", err, agent)
	}

	// Twice: nothing changes, and it says so.
	snapshot := func() map[string]string {
		m := map[string]string{}
		for _, f := range []string{".mcp.json", ".claude/settings.json", ".claude/agents/message-listener.md"} {
			b, _ := os.ReadFile(filepath.Join(repo, f))
			m[f] = string(b)
		}
		return m
	}
	s1 := snapshot()
	out, _, code = e.runIn(repo, "init", "claude", "--agent", "alice", "--role", "dev") // no --yes needed
	if code != 0 || !strings.Contains(out, "nothing to change") {
		t.Errorf("second run: exit %d, output %q; want \"nothing to change\"", code, out)
	}
	if s2 := snapshot(); !reflect.DeepEqual(s1, s2) {
		t.Errorf("second run changed files")
	}

	// A new agent name updates parley's hooks in place rather than adding more.
	e.runIn(repo, "init", "claude", "--agent", "bob", "--yes")
	b, _ := os.ReadFile(filepath.Join(repo, ".claude", "settings.json"))
	if strings.Count(string(b), "hook claude Stop") != 1 || !strings.Contains(string(b), "Stop --agent bob") {
		t.Errorf("re-init with another agent: want one Stop hook for bob:\n%s", b)
	}
}

func TestInitRefusesBrokenJSON(t *testing.T) {
	e := newEnv(t)
	repo := initRepo(t, e)
	const broken = `{"mcpServers": {` // the user's half-edited file
	path := filepath.Join(repo, ".cursor", "mcp.json")
	writeFile(t, path, broken)
	_, errs, code := e.runIn(repo, "init", "cursor", "--yes")
	if code == 0 || !strings.Contains(errs, "not a JSON object") {
		t.Errorf("broken JSON: got exit %d, stderr %q; want a clear refusal", code, errs)
	}
	if b, _ := os.ReadFile(path); string(b) != broken {
		t.Errorf("broken file was changed to %q", b)
	}
}

func TestInitCursorGemini(t *testing.T) {
	for _, tc := range []struct{ client, path string }{
		{"cursor", ".cursor/mcp.json"},
		{"gemini", ".gemini/settings.json"},
	} {
		t.Run(tc.client, func(t *testing.T) {
			e := newEnv(t)
			repo := initRepo(t, e)
			writeFile(t, filepath.Join(repo, tc.path), `{"theme":"dark","mcpServers":{"parley":{"command":"old","env":{"A":"1"}}}}`)
			if _, errs, code := e.runIn(repo, "init", tc.client, "--yes"); code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			m := readJSON(t, filepath.Join(repo, tc.path))
			p := m["mcpServers"].(map[string]any)["parley"].(map[string]any)
			if m["theme"] != "dark" || p["command"] != bin || p["env"].(map[string]any)["A"] != "1" {
				t.Errorf("got %v: want theme kept, command updated, the user's env kept", m)
			}
		})
	}
}

func TestInitCodexTOML(t *testing.T) {
	e := newEnv(t)
	repo := initRepo(t, e)
	codexHome := filepath.Join(e.home, "codex")
	e.extra = append(e.extra, "CODEX_HOME="+codexHome)
	const orig = `# my settings
model = "o3"

[mcp_servers.parley]
command = "old"
args = [
  "x",
]
startup_timeout_sec = 20

[mcp_servers.other]
command = "y" # keep me
`
	path := filepath.Join(codexHome, "config.toml")
	writeFile(t, path, orig)
	out, errs, code := e.runIn(repo, "init", "codex", "--agent", "rev", "--yes")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	b, _ := os.ReadFile(path)
	var cfg struct {
		Model      string `toml:"model"`
		MCPServers map[string]struct {
			Command string   `toml:"command"`
			Args    []string `toml:"args"`
			Timeout int      `toml:"startup_timeout_sec"`
		} `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("result is not TOML: %v\n%s", err, b)
	}
	p := cfg.MCPServers["parley"]
	if cfg.Model != "o3" || cfg.MCPServers["other"].Command != "y" || p.Command != bin ||
		strings.Join(p.Args, " ") != "mcp serve --agent rev" || p.Timeout != 20 {
		t.Errorf("merged config: got %+v", cfg)
	}
	if !strings.Contains(string(b), "# my settings") || !strings.Contains(string(b), "# keep me") {
		t.Errorf("comments were lost:\n%s", b)
	}
	out, _, _ = e.runIn(repo, "init", "codex", "--agent", "rev")
	if !strings.Contains(out, "nothing to change") {
		t.Errorf("second run: %q, want nothing to change", out)
	}
	// A config without the table gets it appended.
	writeFile(t, path, "model = \"o3\"\n")
	e.runIn(repo, "init", "codex", "--yes")
	b, _ = os.ReadFile(path)
	if !strings.HasPrefix(string(b), "model = \"o3\"\n\n[mcp_servers.parley]\n") {
		t.Errorf("appended table: got\n%s", b)
	}
}
