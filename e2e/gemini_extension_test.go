package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/testenv/standin"
)

// TestGeminiExtension installs the repository's Gemini CLI extension with the
// real Gemini CLI, in a throwaway home, and checks that its parley server
// connects in a trusted project.
func TestGeminiExtension(t *testing.T) {
	gemini := standin.CLI(t, "gemini")
	e := newEnv(t)
	ext, _ := filepath.Abs("../extensions/gemini")
	home := filepath.Join(e.home, "gemini")
	proj := filepath.Join(e.home, "proj")
	os.MkdirAll(filepath.Join(proj, ".git"), 0o755)
	os.MkdirAll(home, 0o700)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(stdin string, args ...string) string {
		t.Helper()
		c := exec.CommandContext(ctx, gemini, args...)
		c.Dir = proj
		c.Env = []string{"HOME=" + home, "PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH"), "PARLEY_HOME=" + e.home}
		c.Stdin = strings.NewReader(stdin)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("gemini %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run("", "extensions", "validate", ext); !strings.Contains(out, "successfully validated") {
		t.Fatalf("extensions validate: %s", out)
	}
	// Installing asks to trust the folder: a person answers y.
	if out := run("y\n", "extensions", "install", ext, "--consent"); !strings.Contains(out, `Extension "parley" installed successfully`) {
		t.Fatalf("extensions install: %s", out)
	}
	if out := run("", "mcp", "list"); !strings.Contains(out, "parley (from parley)") || !strings.Contains(out, "Connected") {
		t.Errorf("gemini mcp list: %s; want the extension's parley server connected", out)
	}
	// The server took a session name of its own (no name is baked in).
	if out, _, _ := e.runIn(proj, "agents", "--json"); !strings.Contains(out, `"session-proj-`) {
		t.Errorf("agents after gemini connected: %s; want a session agent", out)
	}
}
