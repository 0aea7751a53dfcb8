package config

import (
	"strings"
	"testing"
	"time"
)

func TestRunnerConfig(t *testing.T) {
	c, err := Parse([]byte(`
permission_timeout = "90s"
cancel_grace = "2s"

[providers.claude]
command = "/opt/claude"
args = ["--model", "opus"]
env = { ANTHROPIC_LOG = "debug" }
steer = false

[providers.aider]
command = "aider --message {prompt}"

[providers.codex]
steer = true
`), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	pt, cg := c.RunnerDurations()
	if pt != 90*time.Second || cg != 2*time.Second {
		t.Errorf("durations: got %v, %v; want 90s, 2s", pt, cg)
	}
	if p := c.Providers["claude"]; p.Command != "/opt/claude" || len(p.Args) != 2 || p.Env["ANTHROPIC_LOG"] != "debug" || p.Steer == nil || *p.Steer {
		t.Errorf("providers.claude: got %+v", p)
	}
	if p := c.Providers["aider"]; p.Command != "aider --message {prompt}" || p.Kind != "" || p.Steer != nil {
		t.Errorf("providers.aider: got %+v", p)
	}
	if p := c.Providers["codex"]; p.Steer == nil || !*p.Steer {
		t.Errorf("providers.codex: got %+v, want steer", p)
	}
	def, _ := (&Config{}).RunnerDurations()
	if def != 10*time.Minute {
		t.Errorf("default permission timeout: got %v, want 10m", def)
	}
}

func TestRunnerConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"bad timeout", `permission_timeout = "soon"`, "invalid permission_timeout"},
		{"negative grace", `cancel_grace = "-1s"`, "invalid cancel_grace"},
		{"bad kind", "[providers.x]\nkind = \"gemini\"\ncommand = \"g\"", "invalid kind"},
		{"command provider without command", "[providers.x]\nargs = [\"a\"]", "needs command"},
		{"steer on a command provider", "[providers.x]\ncommand = \"c\"\nsteer = true", "steer is for claude and codex"},
		{"unknown key", "[providers.claude]\ncmd = \"c\"", `unknown key "providers.claude.cmd"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in), "config.toml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
