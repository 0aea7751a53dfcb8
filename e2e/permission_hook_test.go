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
				t.Fatalf("claude ended before asking: %v\n%s", err, out.String())
			case <-time.After(20 * time.Millisecond):
			}
			c := e.Cmd("permissions", "--json", "--all")
			c.Dir = repo
			b, err := c.Output()
			if err != nil {
				t.Fatalf("parley permissions: %v", err)
			}
			if err := json.Unmarshal(b, &pending); err != nil {
				t.Fatal(err)
			}
		}
		p := pending.Permissions[0]
		if p.AgentID != "lead" || p.Request.ToolName != "Bash" || p.Request.Source != "claude-hook" || !strings.Contains(string(p.Request.Input), file) {
			t.Errorf("pending request: got %+v, want lead's Bash call from the claude hook", p)
		}
		decide(p)
		if err := <-done; err != nil {
			t.Fatalf("claude: %v\n%s", err, out.String())
		}
		return s
	}

	var id string
	run("made-by-hook", func(p api.PendingPermission) {
		id = p.Request.RequestID
		e.Must("allow", id)
	})
	if _, err := os.Stat(filepath.Join(repo, "made-by-hook")); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
	if _, errs, code := e.Run("deny", id); code == 0 || !strings.Contains(errs, "already decided: allowed by cli") {
		t.Errorf("a second decision: exit %d, %q; want it told the request was already allowed", code, errs)
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
