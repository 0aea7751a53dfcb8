package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/testenv/standin"
	"github.com/parley-dev/parley/internal/workspace"
)

// TestCodexThreadName: the MCP server and the hooks of a Codex session that
// was given no name speak as one agent, its thread's. The real Codex names
// the thread to its MCP server only in each tool call's _meta.threadId, and
// to a hook in its input's session_id. The scripted model asks whoami (the
// MCP server, named after Codex's process until then, takes the thread's
// name, and the process's name stays its alias), then patches a file: the
// PreToolUse hook, written with no --agent, leases the file to that same
// agent. A Claude Code session id or a PARLEY_SESSION that the Codex
// inherited names another session: neither reaches the hook's name.
func TestCodexThreadName(t *testing.T) {
	codex := standin.CLI(t, "codex")
	for _, inherited := range []string{"CLAUDE_CODE_SESSION_ID=0d9c1f7e-claude-outer", workspace.EnvSession + "=outer-session"} {
		t.Run(strings.Split(inherited, "=")[0], func(t *testing.T) { codexThreadName(t, codex, inherited) })
	}
}

func codexThreadName(t *testing.T, codex, inherited string) {
	e := newEnv(t)
	repo := gitRepo(t)
	codexHome := e.withCodex(t)
	// init names the hook's agent when none is given; the test takes the
	// name out of both entries, as a client package that can bake in none.
	if out, errs, code := e.in(t, repo, "init", "codex", "--leases", "--agent", "placeholder", "--yes"); code != 0 {
		t.Fatalf("init codex --leases: exit %d\n%s%s", code, out, errs)
	}
	confPath := filepath.Join(codexHome, "config.toml")
	conf, err := os.ReadFile(confPath)
	if err != nil {
		t.Fatal(err)
	}
	unnamed := strings.NewReplacer(`, "--agent", "placeholder"`, "", " --agent placeholder", "").Replace(string(conf))
	if strings.Contains(unnamed, "placeholder") || !strings.Contains(unnamed, `args = ["mcp", "serve"]`) {
		t.Fatalf("config.toml: could not take the name out:\n%s", unnamed)
	}
	if err := os.WriteFile(confPath, []byte(unnamed), 0o600); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var who string // whoami's result, as the model read it
	s := standin.OpenAI(t, func(r *standin.ResponsesRequest) []standin.Item {
		if _, ok := r.Output("call_patch"); ok {
			return []standin.Item{standin.Message("DONE")}
		}
		if out, ok := r.Output("call_who"); ok {
			mu.Lock()
			who = out
			mu.Unlock()
			return []standin.Item{{"type": "custom_tool_call", "call_id": "call_patch", "name": "apply_patch",
				"input": "*** Begin Patch\n*** Update File: src/a.go\n@@\n-v1\n+v2\n*** End Patch\n"}}
		}
		if r.Has("who are you") {
			return []standin.Item{standin.FunctionCall("call_who", "mcp__parley", "whoami", map[string]any{})}
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// The hook's command changed, so the trust init recorded no longer
	// holds: the flag runs it all the same.
	args := append([]string{"exec", "--json", "--skip-git-repo-check", "-s", "workspace-write", "--dangerously-bypass-hook-trust"}, standin.CodexArgs(s)...)
	c := exec.CommandContext(ctx, codex, append(args, "who are you? then change src/a.go")...)
	c.Dir, c.WaitDelay = repo, 5*time.Second
	c.Env = append(e.environ(), inherited)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("codex: %v\n%s", err, out)
	}
	thread := threadOf(out)
	if thread == "" {
		t.Fatalf("no thread.started in codex's output:\n%s", out)
	}
	name, _, _ := workspace.SessionName(workspace.CodexThreadEnv(thread), repo)
	if !strings.HasPrefix(name, "codex-") {
		t.Fatalf("the thread's name: %q, want codex-…", name)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(who, `"`+name+`"`) {
		t.Errorf("whoami through the MCP server: %s; want agent %s, the thread's name\ncodex said:\n%s", who, name, out)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "src", "a.go")); string(b) != "v2\n" {
		t.Errorf("src/a.go was not patched: %q; codex said:\n%s", b, out)
	}
	o, errs, _ := e.in(t, repo, "reserve", "who", "src/a.go")
	if !strings.Contains(o, "by "+name) {
		t.Errorf("who has src/a.go after the patch: %q %s; want the hook's lease for %s, the MCP server's agent", o, errs, name)
	}
	// The process's name moved to the thread's: one agent, not two.
	var agents struct {
		Agents []struct {
			Name string `json:"name"`
		} `json:"agents"`
	}
	o, errs, _ = e.in(t, repo, "agents", "--json")
	if err := json.Unmarshal([]byte(o), &agents); err != nil {
		t.Fatalf("agents --json: %v: %s %s", err, o, errs)
	}
	var names []string
	for _, a := range agents.Agents {
		names = append(names, a.Name)
	}
	if len(names) != 1 || names[0] != name {
		t.Errorf("agents: %v, want only %s", names, name)
	}
}

// threadOf returns the thread id of a `codex exec --json` run.
func threadOf(out []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread_id"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == "thread.started" {
			return ev.ThreadID
		}
	}
	return ""
}
