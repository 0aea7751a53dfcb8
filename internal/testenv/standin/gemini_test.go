package standin_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/testenv/standin"
)

// The Gemini stand-in must be good enough for the real Gemini CLI: a
// headless turn that calls its shell tool ends with the scripted answer,
// and the CLI makes no call beyond loopback.
func TestGeminiRuns(t *testing.T) {
	gemini := standin.CLI(t, "gemini")
	dir := t.TempDir()
	s := standin.Gemini(t, func(r *standin.GenerateRequest) []standin.Part {
		if out, ok := r.Result("call_1"); ok {
			return []standin.Part{standin.GeminiText("FINAL " + strings.TrimSpace(out))}
		}
		return []standin.Part{standin.GeminiCall("call_1", "run_shell_command", map[string]any{"command": "echo hi-from-shell", "description": "say hi"})}
	})
	trap := standin.NewTrap(t)
	c := exec.Command(gemini, "-p", "say hi", "--approval-mode", "yolo")
	c.Dir = dir
	c.Env = append(standin.GeminiEnv(t, s, dir, trap.URL), "PATH="+os.Getenv("PATH"), "GEMINI_CLI_TRUST_WORKSPACE=true")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("gemini: %v\n%s", err, out)
	}
	for i, b := range s.Requests() {
		t.Logf("request %d: %.3000s", i, b)
	}
	if !strings.Contains(string(out), "FINAL") || !strings.Contains(string(out), "hi-from-shell") {
		t.Errorf("gemini output lacks the final answer with the shell's output:\n%s", out)
	}
	if h := trap.Hosts(); len(h) > 0 {
		t.Errorf("the Gemini CLI called beyond loopback: %v", h)
	}
}
