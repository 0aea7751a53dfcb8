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
	for _, want := range []string{`kept a hook that is not Parley's: Stop runs "echo mine"`, `kept permissions.allow "Bash(ls)"`, `kept the MCP server "other"`} {
		if !strings.Contains(out, want) {
			t.Errorf("init does not list what it leaves: want %q in\n%s", want, out)
		}
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
			out, errs, code := e.runIn(repo, "init", tc.client, "--yes")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			m := readJSON(t, filepath.Join(repo, tc.path))
			p := m["mcpServers"].(map[string]any)["parley"].(map[string]any)
			if m["theme"] != "dark" || p["command"] != bin || p["env"] != nil {
				t.Errorf("got %v: want theme kept, and the parley server Parley's whole: command updated, the file's env gone", m)
			}
			if !strings.Contains(out, `took env out of the parley server: {"A":"1"}`) || !strings.Contains(out, `replaced the parley server's command "old"`) {
				t.Errorf("init does not say what it took out of the parley server:\n%s", out)
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
	// (thread_unload_delay_secs goes with the top-level keys: after /quit
	// Codex unloads the thread, and Parley closes its door.)
	if !strings.HasPrefix(string(b), "model = \"o3\"\n") || !strings.Contains(string(b), "\nthread_unload_delay_secs = 0\n\n[mcp_servers.parley]\n") {
		t.Errorf("appended table: got\n%s", b)
	}
	// A setting of the user's stays, and init says what it costs.
	writeFile(t, path, "thread_unload_delay_secs = 600\n")
	out, _, _ = e.runIn(repo, "init", "codex", "--yes")
	if b, _ = os.ReadFile(path); !strings.HasPrefix(string(b), "thread_unload_delay_secs = 600\n") || strings.Count(string(b), "thread_unload_delay_secs") != 1 || !strings.Contains(out, "Your thread_unload_delay_secs = 600 is kept") {
		t.Errorf("the user's unload delay: %s\n%s", out, b)
	}
}

// TestInitRefusesLinksInRepository: a repository that ships .claude, .cursor
// or a config file as a symbolic link (to a directory or file of the user's),
// or a FIFO where a config file belongs, gets a clear refusal from parley
// init: nothing is read through the link into the diff, nothing is written
// through it, the link stays as it was.
func TestInitRefusesLinksInRepository(t *testing.T) {
	tests := []struct {
		name   string
		client string
		plant  func(t *testing.T, repo, victim string)
		link   string // what the error must name
	}{
		{"claude dir links out", "claude", func(t *testing.T, repo, victim string) {
			os.Symlink(victim, filepath.Join(repo, ".claude"))
		}, ".claude"},
		{"mcp.json links to a file of the user's", "claude", func(t *testing.T, repo, victim string) {
			os.Symlink(filepath.Join(victim, "secret.json"), filepath.Join(repo, ".mcp.json"))
		}, ".mcp.json"},
		{"claude agents dir links out", "claude", func(t *testing.T, repo, victim string) {
			os.MkdirAll(filepath.Join(repo, ".claude"), 0o755)
			os.Symlink(victim, filepath.Join(repo, ".claude", "agents"))
		}, filepath.Join(".claude", "agents")},
		{"cursor dir links out", "cursor", func(t *testing.T, repo, victim string) {
			os.Symlink(victim, filepath.Join(repo, ".cursor"))
		}, ".cursor"},
		{"cursor mcp.json links within the repository", "cursor", func(t *testing.T, repo, victim string) {
			writeFile(t, filepath.Join(repo, "conf.json"), "{}")
			os.MkdirAll(filepath.Join(repo, ".cursor"), 0o755)
			os.Symlink("../conf.json", filepath.Join(repo, ".cursor", "mcp.json"))
		}, filepath.Join(".cursor", "mcp.json")},
		{"gemini settings is a FIFO", "gemini", func(t *testing.T, repo, victim string) {
			os.MkdirAll(filepath.Join(repo, ".gemini"), 0o755)
			mkfifo(t, filepath.Join(repo, ".gemini", "settings.json"))
		}, "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			repo := initRepo(t, e)
			victim := filepath.Join(e.home, "victim")
			writeFile(t, filepath.Join(victim, "secret.json"), `{"token":"s3cret"}`)
			writeFile(t, filepath.Join(victim, "settings.json"), `{"mine":true}`)
			tt.plant(t, repo, victim)
			before := snapshot(t, victim)

			out, errs, code := e.runIn(repo, "init", tt.client, "--agent", "alice", "--yes")
			if code == 0 {
				t.Fatalf("init %s: exit 0, want a refusal\nstdout: %s", tt.client, out)
			}
			if !strings.Contains(errs, tt.link) || !strings.Contains(errs, "refusing") {
				t.Errorf("stderr: got %q, want a refusal naming %s", errs, tt.link)
			}
			if strings.Contains(out+errs, "s3cret") {
				t.Errorf("the linked file's content was shown:\n%s%s", out, errs)
			}
			if after := snapshot(t, victim); !reflect.DeepEqual(after, before) {
				t.Errorf("the link's target changed: got %v, want %v", after, before)
			}
			if _, err := os.Lstat(filepath.Join(repo, ".mcp.json")); tt.link != ".mcp.json" && err == nil {
				t.Error("init wrote .mcp.json though it refused")
			}
		})
	}
}

// snapshot is the name and content of every file under dir.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(path)
			m[path] = string(b)
		}
		return nil
	})
	return m
}
