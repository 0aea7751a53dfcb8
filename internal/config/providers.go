package config

import (
	"fmt"
	"time"
)

// Provider configures a managed-agent provider ([providers.NAME]). For the
// built-in claude and codex providers, command is the executable and args
// come before Parley's own arguments; a command provider's command is a shell
// command template ({prompt}, {session}, {agent}, {mode}, {mcp_config}, {cwd}),
// run once per turn with the prompt on stdin. A NAME other than claude, codex
// and command defines a new provider of the given kind (default command).
// Steer keeps a claude or codex agent's process across turns (Claude Code
// with stream-json input, `codex app-server`), so that a prompt that arrives
// during a run is streamed into it instead of waiting for the next. Unset, it
// is the kind's default (runner.ProviderConfig): on for claude, off for codex.
type Provider struct {
	Kind    string            `toml:"kind,omitempty"`
	Command string            `toml:"command,omitempty"`
	Args    []string          `toml:"args,omitempty"`
	Env     map[string]string `toml:"env,omitempty"`
	Steer   *bool             `toml:"steer,omitempty"`
}

// RunnerDurations returns the runner's timeouts, with their defaults applied.
func (c *Config) RunnerDurations() (permissionTimeout, cancelGrace time.Duration) {
	permissionTimeout, _ = parseDuration(c.PermissionTimeout, 10*time.Minute)
	cancelGrace, _ = parseDuration(c.CancelGrace, 5*time.Second)
	return permissionTimeout, cancelGrace
}

func parseDuration(s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return def, fmt.Errorf("want a positive duration such as %s", def)
	}
	return d, nil
}

func validateRunner(c *Config) error {
	if _, err := parseDuration(c.PermissionTimeout, time.Minute); err != nil {
		return fmt.Errorf("invalid permission_timeout %q: %v", c.PermissionTimeout, err)
	}
	if _, err := parseDuration(c.CancelGrace, time.Second); err != nil {
		return fmt.Errorf("invalid cancel_grace %q: %v", c.CancelGrace, err)
	}
	for name, p := range c.Providers {
		switch p.Kind {
		case "", "claude", "codex", "command":
		default:
			return fmt.Errorf("providers.%s: invalid kind %q: want claude, codex or command", name, p.Kind)
		}
		kind := p.Kind
		if kind == "" && (name == "claude" || name == "codex") {
			kind = name
		}
		if (kind == "" || kind == "command") && name != "command" && p.Command == "" {
			return fmt.Errorf("providers.%s: a command provider needs command = \"...\"", name)
		}
		if p.Steer != nil && *p.Steer && kind != "claude" && kind != "codex" {
			return fmt.Errorf("providers.%s: steer is for claude and codex providers, whose process can take a prompt during a run", name)
		}
	}
	return nil
}
