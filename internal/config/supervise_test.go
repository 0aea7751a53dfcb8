package config

import (
	"strings"
	"testing"
	"time"
)

func TestEscalationConfig(t *testing.T) {
	c, err := Parse([]byte(`
stall_after = "3m"
[escalation]
lead = "@lead"
every = "2m"
on_stall = "restart"
`), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	every, perm := c.Escalation.EscalationDurations()
	if c.StallDuration() != 3*time.Minute || every != 2*time.Minute || perm != 5*time.Minute {
		t.Errorf("durations: got stall %v, every %v, permission_after %v; want 3m, 2m, 5m", c.StallDuration(), every, perm)
	}
	if c.Escalation.Lead != "@lead" || c.Escalation.OnStall != "restart" {
		t.Errorf("escalation: got %+v", c.Escalation)
	}
	if d := (&Config{}).StallDuration(); d != 10*time.Minute {
		t.Errorf("default stall_after: got %v, want 10m", d)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"bad on_stall", "[escalation]\non_stall = \"kill\"", "invalid on_stall"},
		{"bad every", "[escalation]\nevery = \"often\"", "invalid every"},
		{"bad lead", "[escalation]\nlead = \"@\"", "invalid lead"},
		{"bad stall_after", `stall_after = "0s"`, "invalid stall_after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in), "config.toml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestBudgetsConfig(t *testing.T) {
	c, err := Parse([]byte(`
[budgets]
workspace_max_cost = 25.5
max_launches = 3

[providers.claude]
max_turns = 40
max_cost = 5
max_duration = "2h"
`), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Budgets.WorkspaceMaxCost != 25.5 || c.Budgets.MaxLaunches != 3 {
		t.Errorf("budgets: got %+v", c.Budgets)
	}
	if p := c.Providers["claude"]; p.MaxTurns != 40 || p.MaxCost != 5 || p.ProviderMaxDuration() != 2*time.Hour {
		t.Errorf("providers.claude budget: got %+v", p)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"negative cap", "[budgets]\nworkspace_max_cost = -1.0", "must not be negative"},
		{"negative turns", "[providers.claude]\nmax_turns = -2", "must not be negative"},
		{"bad duration", "[providers.claude]\nmax_duration = \"a while\"", "invalid max_duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in), "config.toml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
