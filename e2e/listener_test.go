package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/testenv/standin"
)

// TestInitClaudeBackgroundListener runs the real Claude Code in a repository
// set up by `parley init claude` alone. Its main agent starts the
// message-listener sub-agent in the background, as the sub-agent's
// description asks; a background agent cannot show a permission prompt, so
// Parley's tools run only because init allowed them. The listener waits,
// a message comes, and the main agent gets it.
func TestInitClaudeBackgroundListener(t *testing.T) {
	claude := standin.CLI(t, "claude")
	e := newEnv(t)
	repo := initRepo(t, e)
	if out, errs, code := e.runIn(repo, "init", "claude", "--agent", "lead", "--yes"); code != 0 {
		t.Fatalf("init claude: exit %d\n%s%s", code, out, errs)
	}
	// What a person does at the first interactive start: trust the folder
	// (Claude Code ignores a project's allow rules until then) and approve
	// the project's MCP server.
	claudeHome := filepath.Join(e.home, "claude")
	writeFile(t, filepath.Join(claudeHome, ".claude-config", ".claude.json"),
		fmt.Sprintf(`{"hasCompletedOnboarding":true,"projects":{%q:{"hasTrustDialogAccepted":true}}}`, repo))
	writeFile(t, filepath.Join(repo, ".claude", "settings.local.json"), `{"enabledMcpjsonServers":["parley"]}`)

	waiting := make(chan struct{})
	var once bool
	s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		switch first := r.First(); {
		case strings.Contains(first, "LISTENER-TASK"): // the sub-agent
			if out, ok := r.ToolResult("toolu_wait"); ok {
				return []standin.Block{standin.Text("MESSAGES_RECEIVED " + out)}
			}
			if _, ok := r.ToolResult("toolu_check"); ok {
				if !once {
					once = true
					close(waiting)
				}
				return []standin.Block{standin.ToolUse("toolu_wait", "mcp__parley__wait_for_message", map[string]any{"timeout": 60})}
			}
			return []standin.Block{standin.ToolUse("toolu_check", "mcp__parley__check_messages", nil)}
		case strings.Contains(first, "start the listener"): // the main agent
			if r.Has("MESSAGES_RECEIVED") {
				return []standin.Block{standin.Text("MAIN-GOT-MAIL")}
			}
			if _, ok := r.ToolResult("toolu_agent"); ok {
				return []standin.Block{standin.Text("MAIN-LAUNCHED")}
			}
			return []standin.Block{standin.ToolUse("toolu_agent", "Agent", map[string]any{
				"description": "listen for mail", "prompt": "LISTENER-TASK: wait for Parley messages",
				"subagent_type": "message-listener", "run_in_background": true})}
		}
		return nil
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, claude, "-p", "start the listener", "--output-format", "stream-json", "--verbose")
	c.Dir = repo
	c.Env = append(standin.ClaudeEnv(s, claudeHome), "PATH="+os.Getenv("PATH"), "PARLEY_HOME="+e.home)
	stdout := &syncBuffer{}
	c.Stdout, c.Stderr = stdout, stdout
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-waiting:
	case err := <-done:
		t.Fatalf("claude ended before the listener waited: %v\n%s", err, stdout.String())
	case <-ctx.Done():
		t.Fatalf("the listener never waited:\n%s", stdout.String())
	}
	if out, errs, code := e.runIn(repo, "send", "lead", "ping from bob", "--agent", "bob"); code != 0 {
		t.Fatalf("send: exit %d %s%s", code, out, errs)
	}
	if err := <-done; err != nil {
		t.Fatalf("claude: %v\n%s", err, stdout.String())
	}
	out := stdout.String()
	if strings.Contains(out, "haven't granted it yet") || strings.Contains(out, `"permission_denials":[{`) {
		t.Errorf("a Parley tool was refused:\n%s", out)
	}
	if !s.Saw("MESSAGES_RECEIVED") || !s.Saw("ping from bob") {
		t.Errorf("the listener did not return the message to the main agent:\n%s", out)
	}
	if !strings.Contains(out, "MAIN-GOT-MAIL") {
		t.Errorf("the main agent did not get the listener's result:\n%s", out)
	}
}
