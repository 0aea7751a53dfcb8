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
//
// MaxTurns, MaxCost (USD, as the provider reports it) and MaxDuration (the
// time its turns run, in all) are the default budget of the provider's
// agents: a create that sets no bound of its own takes these.
type Provider struct {
	Kind        string            `toml:"kind,omitempty"`
	Command     string            `toml:"command,omitempty"`
	Args        []string          `toml:"args,omitempty"`
	Env         map[string]string `toml:"env,omitempty"`
	Steer       *bool             `toml:"steer,omitempty"`
	MaxTurns    int               `toml:"max_turns,omitempty"`
	MaxCost     float64           `toml:"max_cost,omitempty"`
	MaxDuration string            `toml:"max_duration,omitempty"`
}

// Budgets are the bounds on managed agents beyond each one's ([budgets]).
type Budgets struct {
	// WorkspaceMaxCost caps what one workspace's managed agents may cost
	// together, in USD (0: no cap): once reached, each stops at the end of
	// its turn, and no new one starts.
	WorkspaceMaxCost float64 `toml:"workspace_max_cost,omitempty"`
	// MaxLaunches bounds how many agents one managed agent may create
	// (default 10).
	MaxLaunches int `toml:"max_launches,omitempty"`
}

// ProviderMaxDuration is p's max_duration (0 if unset).
func (p Provider) ProviderMaxDuration() time.Duration {
	d, _ := parseDuration(p.MaxDuration, 0)
	return d
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
	if c.Budgets.WorkspaceMaxCost < 0 || c.Budgets.MaxLaunches < 0 {
		return fmt.Errorf("budgets: workspace_max_cost and max_launches must not be negative")
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
		if p.MaxTurns < 0 || p.MaxCost < 0 {
			return fmt.Errorf("providers.%s: max_turns and max_cost must not be negative", name)
		}
		if _, err := parseDuration(p.MaxDuration, time.Hour); err != nil {
			return fmt.Errorf("providers.%s: invalid max_duration %q: %v", name, p.MaxDuration, err)
		}
	}
	return nil
}
