package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/door"
	"github.com/parley-dev/parley/internal/testenv/standin"
	"github.com/parley-dev/parley/internal/workspace"
)

// pluginTool is how Claude Code names a tool of the plugin's parley server.
const pluginTool = "mcp__plugin_parley_parley__"

// TestClaudePlugin installs the repository's Claude Code marketplace and its
// parley plugin with the real Claude Code, in a throwaway home, and runs a
// session through it: the plugin's server connects, its hooks speak as the
// session's own agent (named from CLAUDE_CODE_SESSION_ID, no name baked in),
// and the session receives a message and sends its answer. A second session
// in the same checkout is a second agent.
func TestClaudePlugin(t *testing.T) {
	claude := standin.CLI(t, "claude")
	e := newEnv(t)
	repoRoot, _ := filepath.Abs("..")
	path := filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	claudeHome := filepath.Join(e.home, "claude")
	writeFile(t, filepath.Join(claudeHome, ".claude-config", ".claude.json"), `{"hasCompletedOnboarding":true}`)
	proj := filepath.Join(e.home, "proj")
	os.MkdirAll(filepath.Join(proj, ".git"), 0o755)

	var s *standin.Server
	run := func(ctx context.Context, dir string, args ...string) (string, error) {
		c := exec.CommandContext(ctx, claude, args...)
		c.Dir = dir
		env := []string{"HOME=" + claudeHome, "CLAUDE_CONFIG_DIR=" + filepath.Join(claudeHome, ".claude-config"),
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
		if s != nil {
			env = standin.ClaudeEnv(s, claudeHome)
		}
		c.Env = append(env, "PATH="+path, "PARLEY_HOME="+e.home)
		out, err := c.CombinedOutput()
		return string(out), err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if out, err := run(ctx, repoRoot, "plugin", "validate", "."); err != nil || !strings.Contains(out, "Validation passed") {
		t.Fatalf("claude plugin validate .: %v\n%s", err, out)
	}
	if out, err := run(ctx, proj, "plugin", "marketplace", "add", repoRoot); err != nil {
		t.Fatalf("marketplace add: %v\n%s", err, out)
	}
	if out, err := run(ctx, proj, "plugin", "install", "parley@parley"); err != nil || !strings.Contains(out, "Successfully installed plugin: parley@parley") {
		t.Fatalf("plugin install: %v\n%s", err, out)
	}
	if out, err := run(ctx, proj, "mcp", "list"); err != nil || !strings.Contains(out, "plugin:parley:parley") || !strings.Contains(out, "Connected") {
		t.Fatalf("claude mcp list: %v\n%s; want the plugin's parley server connected", err, out)
	}

	// Mail for the session's agent waits before it starts: its name comes
	// from the session id, which the test chooses.
	session := "6f1c9a52-0d3e-4b7a-9c1e-2f4b5d6e7a80"
	me, _, _ := workspace.SessionName(func(k string) string {
		if k == "CLAUDE_CODE_SESSION_ID" {
			return session
		}
		return ""
	}, proj)
	if out, errs, code := e.runIn(proj, "send", me, "hello from boss", "--agent", "boss"); code != 0 {
		t.Fatalf("send to %s: exit %d %s%s", me, code, out, errs)
	}
	s = standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		// The task, or the letter Parley writes through the session's
		// door for the mail that waits (it may come before the task).
		if !r.Has("PLUGIN-TASK") && !r.Has(door.LetterMarker) {
			return []standin.Block{standin.Text("OK")}
		}
		if out, ok := r.ToolResult("toolu_send"); ok {
			return []standin.Block{standin.Text("DONE " + out)}
		}
		if out, ok := r.ToolResult("toolu_check"); ok {
			if !strings.Contains(out, "hello from boss") {
				return []standin.Block{standin.Text("NO MAIL: " + out)}
			}
			return []standin.Block{standin.ToolUse("toolu_send", pluginTool+"send_message", map[string]any{"to": "boss", "content": "got it, boss"})}
		}
		return []standin.Block{standin.ToolUse("toolu_check", pluginTool+"check_messages", nil)}
	})
	// Only send_message is allowed by hand: the plugin's hook lets
	// Parley's read tools (check_messages) run without a prompt.
	out, err := run(ctx, proj, "-p", "PLUGIN-TASK", "--session-id", session, "--output-format", "json",
		"--allowedTools", pluginTool+"send_message")
	if err != nil {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}
	// The UserPromptSubmit hook told the model of the mail, as the
	// session's agent: the hooks and the server agree on the name.
	if !s.Saw(fmt.Sprintf("Parley: 1 new message for %s", me)) {
		t.Errorf("the hook's notice for %s never reached the model:\n%s", me, out)
	}
	if !strings.Contains(out, "DONE") {
		t.Errorf("the session did not finish its send:\n%s", out)
	}
	var inbox struct {
		Messages []struct{ From, Content string } `json:"messages"`
	}
	ib, errs, code := e.runIn(proj, "inbox", "--agent", "boss", "--json")
	if code != 0 || json.Unmarshal([]byte(ib), &inbox) != nil || len(inbox.Messages) != 1 ||
		inbox.Messages[0].From != me || inbox.Messages[0].Content != "got it, boss" {
		t.Errorf("boss's inbox: %s %s; want %s's answer", ib, errs, me)
	}

	// Another session in this checkout is another agent.
	other := "0b6e2d41-7c8f-4a1b-8e2d-3c4f5a6b7c8d"
	if out, err := run(ctx, proj, "-p", "hi", "--session-id", other, "--output-format", "json"); err != nil {
		t.Fatalf("second session: %v\n%s", err, out)
	}
	them, _, _ := workspace.SessionName(func(k string) string {
		if k == "CLAUDE_CODE_SESSION_ID" {
			return other
		}
		return ""
	}, proj)
	agents, _, _ := e.runIn(proj, "agents")
	if them == me || !strings.Contains(agents, me) || !strings.Contains(agents, them) {
		t.Errorf("agents: %q; want two session agents, %s and %s", agents, me, them)
	}
}
