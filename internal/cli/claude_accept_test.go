package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClaudeLetters: which settings and flags make Claude Code sessions
// hold Parley's letters, and what doctor, init and the hooks then advise.
func TestClaudeLetters(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("CLAUDE_CONFIG_DIR", cfg)
	root := t.TempDir()
	write := func(path, text string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(path), 0o700)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	user, project := filepath.Join(cfg, "settings.json"), filepath.Join(root, ".claude", "settings.json")
	for _, c := range []struct {
		name          string
		user, project string
		args          []string
		holds         bool
		want          string
	}{
		{"nothing set", "", "", nil, false, "start in default mode"},
		{"bypass by flag", "", "", []string{"claude", "--permission-mode", "bypassPermissions"}, true, `add "crossSessionInbound": "accept" to ` + user},
		{"bypass by the old flag", "", "", []string{"claude", "--dangerously-skip-permissions"}, true, "run in bypassPermissions"},
		{"bypass and accept by flags", "", "", []string{"claude", "--permission-mode=bypassPermissions", "--settings", `{"crossSessionInbound":"accept"}`}, false, "the session's --settings says"},
		{"bypass by the project", "", `{"permissions":{"defaultMode":"bypassPermissions"}}`, nil, true, "run in bypassPermissions"},
		{"accept in the project is ignored", "", `{"crossSessionInbound":"accept","permissions":{"defaultMode":"bypassPermissions"}}`, nil, true, "ignores in a project's settings"},
		{"accept in the user's settings", `{"crossSessionInbound":"accept"}`, `{"permissions":{"defaultMode":"bypassPermissions"}}`, nil, false, "sessions take Parley's letters in any permission mode"},
		{"refuse in the user's settings", `{"crossSessionInbound":"refuse"}`, "", nil, true, "refuse Parley's letters"},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(user)
			os.Remove(project)
			if c.user != "" {
				write(user, c.user)
			}
			if c.project != "" {
				write(project, c.project)
			}
			l := checkClaudeLetters(root, c.args)
			if l.Holds != c.holds || !strings.Contains(l.Detail+" "+l.Fix, c.want) {
				t.Errorf("got %+v, want holds %v and %q", l, c.holds, c.want)
			}
			if l.Holds && !strings.Contains(l.Fix, `--settings '{"crossSessionInbound":"accept"}'`) && !strings.Contains(l.Fix, `"accept" in`) {
				t.Errorf("fix: %q, want how to let letters in", l.Fix)
			}
		})
	}
}
