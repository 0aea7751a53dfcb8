package standin_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/testenv/standin"
)

// The stand-ins must be good enough for the real CLIs: one scripted turn
// each, with a tool call, ends with the scripted final answer.
func TestClaudeRuns(t *testing.T) {
	claude := standin.CLI(t, "claude")
	dir := t.TempDir()
	s := standin.Anthropic(t, func(r *standin.MessagesRequest) []standin.Block {
		if out, ok := r.ToolResult("toolu_1"); ok {
			return []standin.Block{standin.Text("FINAL " + strings.TrimSpace(out))}
		}
		return []standin.Block{standin.ToolUse("toolu_1", "Bash", map[string]any{"command": "echo hi-from-bash", "description": "say hi"})}
	})
	c := exec.Command(claude, "-p", "say hi", "--allowedTools", "Bash(echo:*)")
	c.Dir = dir
	c.Env = append(standin.ClaudeEnv(s, dir), "PATH="+os.Getenv("PATH"))
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "FINAL hi-from-bash" {
		t.Errorf("got %q, want FINAL hi-from-bash", got)
	}
}

func TestCodexRuns(t *testing.T) {
	codex := standin.CLI(t, "codex")
	dir := t.TempDir()
	s := standin.OpenAI(t, func(r *standin.ResponsesRequest) []standin.Item {
		if out, ok := r.Output("call_1"); ok {
			return []standin.Item{standin.Message("FINAL " + out)}
		}
		return []standin.Item{standin.FunctionCall("call_1", "", "exec_command", map[string]any{"cmd": "echo hi-from-shell"})}
	})
	args := append([]string{"exec", "--json", "--skip-git-repo-check", "-s", "workspace-write"}, standin.CodexArgs(s)...)
	c := exec.Command(codex, append(args, "say hi")...)
	c.Dir = dir
	c.Env = []string{"HOME=" + dir, "CODEX_HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("codex: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"FINAL `) || !strings.Contains(string(out), "hi-from-shell") {
		t.Errorf("codex output lacks the final answer with the shell's output:\n%s", out)
	}
}
