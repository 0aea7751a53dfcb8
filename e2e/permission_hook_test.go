package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/client"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/testenv/standin"
)

// claudeRepo is a repository set up by `parley init claude` with args, and
// the home of a Claude Code that trusts it and approved its parley server
// (what a person does at the first interactive start).
func claudeRepo(t *testing.T, e *env, args ...string) (repo, claudeHome string) {
	t.Helper()
	repo = initRepo(t, e)
	if out, errs, code := e.runIn(repo, append([]string{"init", "claude", "--yes"}, args...)...); code != 0 {
		t.Fatalf("init claude: exit %d\n%s%s", code, out, errs)
	}
	claudeHome = filepath.Join(e.home, "claude")
	writeFile(t, filepath.Join(claudeHome, ".claude-config", ".claude.json"),
		fmt.Sprintf(`{"hasCompletedOnboarding":true,"projects":{%q:{"hasTrustDialogAccepted":true}}}`, repo))
	writeFile(t, filepath.Join(repo, ".claude", "settings.local.json"), `{"enabledMcpjsonServers":["parley"]}`)
	return repo, claudeHome
}

// TestClaudePermissionRequestHook: the real Claude Code, set up with `parley
// init claude --permissions`, runs a background sub-agent (where
// PermissionRequest fires in -p) whose Bash call needs approval. The hook
// files it in Parley's inbox; `parley allow` decides it and the command runs;
// a second decision is told it came too late; a deny reaches the model as
// the tool's refusal.
func TestClaudePermissionRequestHook(t *testing.T) {
	claude := standin.CLI(t, "claude")
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	e := newEnv(t)
	repo, claudeHome := claudeRepo(t, e, "--agent", "lead", "--permissions")
	settings, _ := os.ReadFile(filepath.Join(repo, ".claude", "settings.json"))
	if !strings.Contains(string(settings), "hook claude PermissionRequest --agent lead") {
		t.Fatalf("init --permissions wrote no PermissionRequest hook:\n%s", settings)
	}

	run := func(file string, decide func(p api.PendingPermission)) *standin.Server {
		s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
			switch first := r.First(); {
			case strings.Contains(first, "SUBAGENT-TASK"):
				if out, ok := r.ToolResult("toolu_py"); ok {
					return []standin.Block{standin.Text("SUB-DONE " + out)}
				}
				return []standin.Block{standin.ToolUse("toolu_py", "Bash", map[string]any{
					"command": fmt.Sprintf(`python3 -c "open('%s','w')"`, file), "description": "create the file"})}
			case strings.Contains(first, "make the file"):
				if _, ok := r.ToolResult("toolu_agent"); ok {
					return []standin.Block{standin.Text("MAIN-LAUNCHED")}
				}
				return []standin.Block{standin.ToolUse("toolu_agent", "Agent", map[string]any{"description": "bg worker",
					"prompt": "SUBAGENT-TASK: create the file", "subagent_type": "general-purpose", "run_in_background": true})}
			}
			return nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, claude, "-p", "make the file")
		c.Dir = repo
		c.Env = append(standin.ClaudeEnv(s, claudeHome), "PATH="+os.Getenv("PATH"), "PARLEY_HOME="+e.home)
		decideHookRequest(t, e, c, "claude", "lead", file, decide)
		return s
	}

	id := allowThenDeny(t, e, repo, run)
	if _, errs, code := e.Run("deny", id); code == 0 || !strings.Contains(errs, "already decided: allowed by cli") {
		t.Errorf("a second decision: exit %d, %q; want it told the request was already allowed", code, errs)
	}
}

// allowThenDeny runs a client twice through run (which makes it ask for a
// command that creates file in repo, and decides with decide): `parley
// allow` must let the command run, and `parley deny`'s message must reach
// the model instead. It returns the allowed request's id.
func allowThenDeny(t *testing.T, e *env, repo string, run func(file string, decide func(api.PendingPermission)) *standin.Server) string {
	t.Helper()
	var id string
	run("made-by-hook", func(p api.PendingPermission) {
		id = p.Request.RequestID
		e.Must("allow", id)
	})
	if _, err := os.Stat(filepath.Join(repo, "made-by-hook")); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
	s := run("never-made", func(p api.PendingPermission) {
		e.Must("deny", p.Request.RequestID, "--message", "not this one")
	})
	if _, err := os.Stat(filepath.Join(repo, "never-made")); err == nil {
		t.Errorf("the denied command ran")
	}
	if !s.Saw("not this one") {
		t.Errorf("the model never saw the denial's message")
	}
	return id
}

// decideHookRequest runs c, a client that must ask Parley's
// PermissionRequest hook (source CLIENT-hook, as agent) for a Bash call
// naming file; decide answers the request once it is in the inbox, and c
// must then end well.
func decideHookRequest(t *testing.T, e *env, c *exec.Cmd, client, agent, file string, decide func(api.PendingPermission)) {
	t.Helper()
	out := &syncBuffer{}
	c.Stdout, c.Stderr = out, out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var pending api.PermissionsResult
	for len(pending.Permissions) == 0 {
		select {
		case err := <-done:
			t.Fatalf("%s ended before asking: %v\n%s", client, err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		ls := e.Cmd("permissions", "--json", "--all")
		ls.Dir = c.Dir
		b, err := ls.Output()
		if err != nil {
			t.Fatalf("parley permissions: %v", err)
		}
		if err := json.Unmarshal(b, &pending); err != nil {
			t.Fatal(err)
		}
	}
	p := pending.Permissions[0]
	// (An agent ending in "-" is a prefix: a Codex thread's own name.)
	named := p.AgentID == agent || strings.HasSuffix(agent, "-") && strings.HasPrefix(p.AgentID, agent)
	if !named || p.Request.ToolName != "Bash" || p.Request.Source != client+"-hook" || !strings.Contains(string(p.Request.Input), file) {
		t.Errorf("pending request: got %+v, want %s's Bash call from the %s hook", p, agent, client)
	}
	decide(p)
	if err := <-done; err != nil {
		t.Fatalf("%s: %v\n%s", client, err, out.String())
	}
}

// TestCodexPermissionRequestHook: the real Codex, set up with `parley init
// codex --permissions` (which has Codex trust the hook), asks before a
// command outside its sandbox (codex exec --approve-for-me, where
// PermissionRequest fires). The hook files it in Parley's inbox; `parley
// allow` decides it and the command runs; a deny reaches the model as the
// command's refusal.
func TestCodexPermissionRequestHook(t *testing.T) {
	codex := standin.CLI(t, "codex")
	e := newEnv(t)
	repo := initRepo(t, e)
	e.withCodex(t)
	if out, errs, code := e.runIn(repo, "init", "codex", "--permissions", "--yes"); code != 0 || !strings.Contains(out, "Codex now trusts") {
		t.Fatalf("init codex --permissions: exit %d, want the hook trusted\n%s%s", code, out, errs)
	}

	run := func(file string, decide func(p api.PendingPermission)) *standin.Server {
		s := standin.OpenAI(t, func(r *standin.ResponsesRequest) []standin.Item {
			if out, ok := r.Output("call_esc"); ok {
				return []standin.Item{standin.Message("AFTER " + out)}
			}
			if r.Has("make the file") {
				return []standin.Item{standin.FunctionCall("call_esc", "", "exec_command", map[string]any{
					"cmd": "touch " + file, "sandbox_permissions": "require_escalated", "justification": "create the file"})}
			}
			return nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		args := append([]string{"exec", "--json", "--skip-git-repo-check", "--approve-for-me"}, standin.CodexArgs(s)...)
		c := exec.CommandContext(ctx, codex, append(args, "make the file")...)
		c.Dir, c.Env = repo, e.environ()
		// A zero-flag init names no agent: the hook speaks as the thread.
		decideHookRequest(t, e, c, "codex", "codex-repo-", file, decide)
		return s
	}

	allowThenDeny(t, e, repo, run)
}

// TestPermissionHookFallsThrough: with no decision within --wait, the hook
// answers nothing (exit 0, empty stdout: the client shows its own prompt),
// says so on stderr, and the request is closed as expired, so a late
// decision is told it came too late.
func TestPermissionHookFallsThrough(t *testing.T) {
	e := newEnv(t)
	e.Must("daemon", "start") // a hook never starts it: it must answer at once
	for _, client := range []string{"claude", "codex"} {
		h := e.Cmd("hook", client, "PermissionRequest", "--agent", "lead", "--workspace", "w", "--wait", "1s")
		h.Stdin = strings.NewReader(`{"tool_name":"Bash","tool_input":{"command":"make"}}`)
		var stdout, stderr strings.Builder
		h.Stdout, h.Stderr = &stdout, &stderr
		if err := h.Run(); err != nil || stdout.Len() != 0 || !strings.Contains(stderr.String(), "falling back to "+client+"'s own prompt") {
			t.Fatalf("hook %s with no decision: %v, stdout %q, stderr %q; want exit 0, no answer, and a word on stderr", client, err, stdout.String(), stderr.String())
		}
		var pending api.PermissionsResult
		e.MustJSON(&pending, "permissions", "--workspace", "w")
		if len(pending.Permissions) != 0 {
			t.Fatalf("after the hook gave up: %d requests pending, want none", len(pending.Permissions))
		}
		_, rest, _ := strings.Cut(stderr.String(), "permission request ")
		id, _, _ := strings.Cut(rest, ":")
		if _, errs, code := e.Run("allow", id, "--workspace", "w"); code == 0 || !strings.Contains(errs, "already") {
			t.Errorf("a decision after the hook gave up on %s: exit %d, %q; want it told the request is closed", id, code, errs)
		}
	}
}

// BenchmarkPermissionDecisionToHook measures a decision reaching a blocked
// `parley hook claude PermissionRequest`: from the decision's API call to the
// hook's answer on its stdout. The floor, in the same run, is the decision's
// API call alone.
func BenchmarkPermissionDecisionToHook(b *testing.B) {
	e := newEnv(b)
	e.Must("daemon", "start")
	paths, err := home.Resolve(e.home)
	if err != nil {
		b.Fatal(err)
	}
	c := client.New(paths).As("w", "lead")
	ctx := context.Background()
	var toHook, call []time.Duration
	for i := 0; i < b.N; i++ {
		h := e.Cmd("hook", "claude", "PermissionRequest", "--agent", "lead", "--workspace", "w")
		h.Stdin = strings.NewReader(`{"tool_name":"Bash","tool_input":{"command":"make"}}`)
		stdout, _ := h.StdoutPipe()
		if err := h.Start(); err != nil {
			b.Fatal(err)
		}
		var id string
		for id == "" {
			p, err := c.Permissions(ctx, false)
			if err != nil {
				b.Fatal(err)
			}
			if len(p.Permissions) > 0 {
				id = p.Permissions[0].Request.RequestID
			}
		}
		start := time.Now()
		if err := c.RespondPermission(ctx, id, api.PermissionDecision{Behavior: "allow", By: "bench"}); err != nil {
			b.Fatal(err)
		}
		call = append(call, time.Since(start))
		line, err := bufio.NewReader(stdout).ReadString('\n')
		toHook = append(toHook, time.Since(start))
		if err != nil || !strings.Contains(line, `"behavior":"allow"`) {
			b.Fatalf("hook answered %q, %v", line, err)
		}
		h.Wait()
	}
	pct := func(ds []time.Duration, p float64) float64 {
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return float64(s[min(len(s)-1, int(float64(len(s))*p))].Microseconds())
	}
	b.ReportMetric(pct(toHook, 0.5), "decision-to-hook-p50-us")
	b.ReportMetric(pct(toHook, 0.99), "decision-to-hook-p99-us")
	b.ReportMetric(pct(call, 0.5), "decision-call-p50-us")
}
