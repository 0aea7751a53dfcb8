package runner

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/door"
)

// fakeBin puts an executable named name on a fresh PATH and returns its path.
func fakeBin(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return p
}

// TestClaudeArgv: with steer = false, each turn is a process of its own.
func TestClaudeArgv(t *testing.T) {
	claude := fakeBin(t, "claude")
	perTurn := false
	ps, err := providers(map[string]ProviderConfig{"claude": {Steer: &perTurn}})
	if err != nil {
		t.Fatal(err)
	}
	base := Agent{ID: "w1", Workspace: "ws", Cwd: "/src"}
	tail := func(mode string) []string {
		return []string{"--permission-mode", mode, "--permission-prompt-tool", "mcp__parley-self__request_permission", "--mcp-config", "/h/agents/w1/mcp.json",
			"--allowedTools", "mcp__parley,mcp__parley-self", "--settings", `{"crossSessionInbound":"accept"}`}
	}
	for _, tc := range []struct {
		name      string
		mode      string
		session   string
		prompt    string
		wantArgv  []string
		wantStdin string
	}{
		{"first turn", "", "", "fix the bug", append([]string{claude, "-p", "fix the bug", "--output-format", "stream-json", "--verbose"}, tail("default")...), ""},
		{"resume", "plan", "sess-1", "and now?", append([]string{claude, "-p", "and now?", "--output-format", "stream-json", "--verbose", "--resume", "sess-1"}, tail("plan")...), ""},
		{"bypass", "bypassPermissions", "", "go", append([]string{claude, "-p", "go", "--output-format", "stream-json", "--verbose"}, tail("bypassPermissions")...), ""},
		{"flag-like prompt on stdin", "acceptEdits", "", "--help me", append([]string{claude, "-p", "--output-format", "stream-json", "--verbose"}, tail("acceptEdits")...), "--help me"},
		{"long prompt on stdin", "", "", strings.Repeat("x", maxArgPrompt+1), append([]string{claude, "-p", "--output-format", "stream-json", "--verbose"}, tail("default")...), strings.Repeat("x", maxArgPrompt+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := base
			a.Mode, a.SessionID = tc.mode, tc.session
			sp, err := ps["claude"].build(&turn{Agent: a, Prompt: tc.prompt, MCPConfig: "/h/agents/w1/mcp.json", Exe: "/bin/parley", Home: "/h"})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sp.Argv, tc.wantArgv) {
				t.Errorf("argv:\ngot  %q\nwant %q", sp.Argv, tc.wantArgv)
			}
			if sp.Stdin != tc.wantStdin {
				t.Errorf("stdin: got %d bytes, want %d", len(sp.Stdin), len(tc.wantStdin))
			}
			if sp.Format != "claude" {
				t.Errorf("format: got %q, want claude", sp.Format)
			}
			if want := []string{"MCP_CONNECTION_NONBLOCKING=0", "MCP_CONNECT_TIMEOUT_MS=60000"}; !reflect.DeepEqual(sp.Env, want) {
				t.Errorf("env: got %q, want %q (Claude Code waits for Parley's tools)", sp.Env, want)
			}
		})
	}
}

// TestSteerDefaults: managed Claude Code keeps one process across turns
// unless steer = false; Codex keeps codex exec unless steer = true, and a
// provider of another kind ignores it.
func TestSteerDefaults(t *testing.T) {
	claude := fakeBin(t, "claude")
	fakeBin(t, "codex")
	on, off := true, false
	ps, err := providers(map[string]ProviderConfig{
		"cc":      {Kind: KindClaude},
		"cc1":     {Kind: KindClaude, Steer: &off},
		"cxsteer": {Kind: KindCodex, Steer: &on},
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"claude": true, "cc": true, "cc1": false, "codex": false, "cxsteer": true, "command": false} {
		if got := ps[name].steer; got != want {
			t.Errorf("provider %s steers: got %v, want %v", name, got, want)
		}
	}
	// The default's argv: prompts come as stream-json on stdin, echoed back
	// as Claude Code takes each in.
	sp, err := ps["claude"].build(&turn{Agent: Agent{ID: "w1", SessionID: "sess-1"}, Prompt: "fix the bug", MCPConfig: "/m.json"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{claude, "-p", "--input-format", "stream-json", "--replay-user-messages", "--output-format", "stream-json", "--verbose", "--resume", "sess-1",
		"--permission-mode", "default", "--permission-prompt-tool", "mcp__parley-self__request_permission", "--mcp-config", "/m.json",
		"--allowedTools", "mcp__parley,mcp__parley-self", "--settings", `{"crossSessionInbound":"accept"}`}
	if !reflect.DeepEqual(sp.Argv, want) || sp.Stdin != "" {
		t.Errorf("argv:\ngot  %q (stdin %q)\nwant %q", sp.Argv, sp.Stdin, want)
	}
}

func TestClaudeArgvConfigured(t *testing.T) {
	bin := fakeBin(t, "my-claude")
	perTurn := false
	// A provider that passes its own --settings says what it accepts there.
	ps, err := providers(map[string]ProviderConfig{"claude": {Command: "my-claude", Steer: &perTurn, Args: []string{"--model", "opus", "--settings", "/mine.json"},
		Env: map[string]string{"MCP_CONNECT_TIMEOUT_MS": "9000"}}})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ps["claude"].build(&turn{Agent: Agent{ID: "a"}, Prompt: "hi", MCPConfig: "/m.json"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{bin, "--model", "opus", "--settings", "/mine.json", "-p", "hi", "--output-format", "stream-json", "--verbose",
		"--permission-mode", "default", "--permission-prompt-tool", "mcp__parley-self__request_permission", "--mcp-config", "/m.json",
		"--allowedTools", "mcp__parley,mcp__parley-self"}
	if !reflect.DeepEqual(sp.Argv, want) {
		t.Errorf("argv:\ngot  %q\nwant %q", sp.Argv, want)
	}
	// The provider's own setting wins over Parley's default.
	if want := []string{"MCP_CONNECTION_NONBLOCKING=0"}; !reflect.DeepEqual(sp.Env, want) {
		t.Errorf("env: got %q, want %q", sp.Env, want)
	}
}

func TestCodexArgv(t *testing.T) {
	codex := fakeBin(t, "codex")
	ps, err := providers(nil)
	if err != nil {
		t.Fatal(err)
	}
	mcpArgs := func(key, profile string) []string {
		return []string{
			"-c", "mcp_servers." + key + `.command="/bin/parley"`,
			"-c", "mcp_servers." + key + `.args=["mcp","serve","--agent","w1","--workspace","ws","--profile","` + profile + `"]`,
			"-c", "mcp_servers." + key + `.env={PARLEY_HOME="/h"}`,
			"-c", "mcp_servers." + key + `.default_tools_approval_mode="approve"`,
			"-c", "mcp_servers." + key + ".required=true",
			"-c", "mcp_servers." + key + ".startup_timeout_sec=60",
		}
	}
	cfg := func(sandbox string) []string {
		out := []string{"-c", `sandbox_mode="` + sandbox + `"`, "-c", `approval_policy="never"`}
		out = append(out, mcpArgs("parley", "native")...)
		return append(out, mcpArgs("parley-self", "self")...)
	}
	join := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		mode    string
		session string
		prompt  string
		want    []string
	}{
		{"first turn", "", "", "fix it", join([]string{codex, "exec", "--json", "--skip-git-repo-check"}, cfg("workspace-write"), []string{"--", "fix it"})},
		{"plan is read-only", "plan", "", "look", join([]string{codex, "exec", "--json", "--skip-git-repo-check"}, cfg("read-only"), []string{"--", "look"})},
		{"resume", "bypassPermissions", "th_1", "-x more", join([]string{codex, "exec", "resume", "--json", "--skip-git-repo-check"}, cfg("danger-full-access"), []string{"--", "th_1", "-x more"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Agent{ID: "w1", Workspace: "ws", Mode: tc.mode, SessionID: tc.session}
			sp, err := ps["codex"].build(&turn{Agent: a, Prompt: tc.prompt, Exe: "/bin/parley", Home: "/h"})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sp.Argv, tc.want) {
				t.Errorf("argv:\ngot  %q\nwant %q", sp.Argv, tc.want)
			}
		})
	}
}

func TestCommandTemplate(t *testing.T) {
	ps, err := providers(map[string]ProviderConfig{"echoer": {Command: "echo", Args: []string{"it's", "{prompt}", "--p={prompt}!"}}})
	if err != nil {
		t.Fatal(err)
	}
	a := Agent{ID: "w1", Workspace: "ws", Provider: "command", Command: `printf '%s\n' {prompt} {agent} {session}`, SessionID: "s 1"}
	for _, tc := range []struct {
		name, prov, prompt, want string
	}{
		{"substitutes shell-quoted", "command", `it's $HOME; rm -rf /`, `printf '%s\n' 'it'\''s $HOME; rm -rf /' w1 's 1'`},
		{"configured template with args", "echoer", "hi there", `echo 'it'\''s' 'hi there' '--p=''hi there''!'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := ps[tc.prov].build(&turn{Agent: a, Prompt: tc.prompt})
			if err != nil {
				t.Fatal(err)
			}
			if len(sp.Argv) != 3 || sp.Argv[1] != "-c" || sp.Argv[2] != tc.want {
				t.Errorf("argv: got %q, want [sh -c %q]", sp.Argv, tc.want)
			}
			if sp.Stdin != tc.prompt {
				t.Errorf("stdin: got %q, want the prompt", sp.Stdin)
			}
		})
	}
	// What sh makes of the quoting: the prompt comes back as one word, unexpanded.
	sp, _ := ps["command"].build(&turn{Agent: a, Prompt: `it's $HOME; rm -rf /`})
	out, err := exec.Command(sp.Argv[0], sp.Argv[1:]...).Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "it's $HOME; rm -rf /\nw1\ns 1\n"; string(out) != want {
		t.Errorf("sh output: got %q, want %q", out, want)
	}
}

func TestProviderCheck(t *testing.T) {
	dir := t.TempDir()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sh, filepath.Join(dir, "sh")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	ps, err := providers(map[string]ProviderConfig{"claude": {Command: "no-such-claude"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ps["command"].check(&Agent{Command: "cd /tmp && no-such-thing"}); err != nil {
		t.Errorf("a template starting with a builtin: got %v, want no error", err)
	}
	for _, tc := range []struct {
		name, prov, command, want string
	}{
		{"missing claude", "claude", "", `executable "no-such-claude" not found`},
		{"missing codex", "codex", "", `executable "codex" not found`},
		{"command without command", "command", "", "needs a command"},
		{"command with missing program", "command", "no-such-agent --once", `executable "no-such-agent" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ps[tc.prov].check(&Agent{Command: tc.command})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestProvidersConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		conf map[string]ProviderConfig
		want string
	}{
		{"bad kind", map[string]ProviderConfig{"x": {Kind: "gemini", Command: "g"}}, "invalid kind"},
		{"command kind without command", map[string]ProviderConfig{"x": {}}, "needs command"},
		{"bad name", map[string]ProviderConfig{"a b": {Command: "x"}}, "invalid provider name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := providers(tc.conf)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestMCPConfigFile(t *testing.T) {
	dir := t.TempDir()
	path, err := writeMCPConfig(dir, &turn{Agent: Agent{ID: "w1", Workspace: "my ws"}, Exe: "/bin/parley", Home: "/h"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		MCPServers map[string]struct {
			Type    string            `json:"type"`
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	for key, profile := range map[string]string{"parley": "native", "parley-self": "self"} {
		s := got.MCPServers[key]
		want := []string{"mcp", "serve", "--agent", "w1", "--workspace", "my ws", "--profile", profile}
		if s.Type != "stdio" || s.Command != "/bin/parley" || !reflect.DeepEqual(s.Args, want) || s.Env["PARLEY_HOME"] != "/h" {
			t.Errorf("%s: got %+v, want stdio /bin/parley %q with PARLEY_HOME=/h", key, s, want)
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode: got %v, want 0600", fi.Mode().Perm())
	}
}

// TestAgentEnvDropsSessionDoors: a managed agent's CLI does not inherit the
// client session that started the daemon (its inbox socket, its token, its
// ids): its own parley mcp serve must register the CLI's door, not that
// session's.
func TestAgentEnvDropsSessionDoors(t *testing.T) {
	for _, k := range door.SessionVars {
		t.Setenv(k, "inherited")
	}
	t.Setenv("KEEP_ME", "yes")
	env := agentEnv(&turn{Agent: Agent{ID: "a1", Workspace: "w"}, Home: "/h"}, nil, nil)
	kept := false
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(door.SessionVars, k) {
			t.Errorf("a managed agent inherits %s", kv)
		}
		kept = kept || kv == "KEEP_ME=yes"
	}
	if !kept {
		t.Errorf("the rest of the environment was dropped: %v", env)
	}
}
