package permission

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// Time-boxed allow rules (issue 28): "allow npm test for this agent for 30
// minutes". A request that a live rule matches is allowed as soon as it is
// filed, by the rule; the asker need not wait for anyone. Rules live in the
// daemon's memory, bounded in number and time: a restart forgets them.

// Rule allows matching requests until it expires.
type Rule struct {
	ID        string
	Workspace string
	Agent     string // "" matches any agent of the workspace
	Tool      string // the tool's name, exactly
	// Match, if set, must start the request's command (Bash and other
	// shell tools: input.command), or else appear in its input as JSON.
	Match   string
	By      string // who made it
	Created time.Time
	Expires time.Time
	Uses    int // requests it allowed
}

// Rule limits.
const (
	MaxRuleTTL   = 24 * time.Hour
	maxRules     = 200
	maxRuleMatch = 1024
)

// matches reports whether the rule allows r at now.
func (u *Rule) matches(r *Request, now time.Time) bool {
	if now.After(u.Expires) || r.Workspace != u.Workspace || r.Tool != u.Tool || (u.Agent != "" && r.Agent != u.Agent) {
		return false
	}
	if u.Match == "" {
		return true
	}
	var in struct {
		Command *string `json:"command"`
	}
	if json.Unmarshal(r.Input, &in) == nil && in.Command != nil {
		return strings.HasPrefix(strings.TrimSpace(*in.Command), u.Match)
	}
	return strings.Contains(string(r.Input), u.Match)
}

// AddRule makes a rule that allows u.Tool (for u.Agent, matching u.Match)
// for ttl.
func (in *Inbox) AddRule(u Rule, ttl time.Duration) (*Rule, error) {
	const op = "add permission rule"
	if err := hub.ValidWorkspace(u.Workspace); err != nil {
		return nil, err
	}
	if strings.TrimSpace(u.Tool) == "" {
		return nil, hub.Errorf(op, hub.Invalid, "a rule needs the tool it allows (tool_name)")
	}
	if u.Agent != "" {
		if err := hub.ValidName("agent name", u.Agent); err != nil {
			return nil, err
		}
	}
	if len(u.Match) > maxRuleMatch {
		return nil, hub.Errorf(op, hub.Invalid, "match is over %d bytes", maxRuleMatch)
	}
	if ttl <= 0 || ttl > MaxRuleTTL {
		return nil, hub.Errorf(op, hub.Invalid, "a rule lasts from a minute to %s, not %s", MaxRuleTTL, ttl)
	}
	now := time.Now().UTC()
	u.ID, u.Created, u.Expires, u.Uses = "rule-"+strings.TrimPrefix(NewID(), "perm-"), now, now.Add(ttl), 0
	in.mu.Lock()
	in.rules = slices.DeleteFunc(in.rules, func(x *Rule) bool { return now.After(x.Expires) })
	if len(in.rules) >= maxRules {
		in.mu.Unlock()
		return nil, hub.Errorf(op, hub.Conflict, "%d rules are live already: remove some first", maxRules)
	}
	in.rules = append(in.rules, &u)
	in.mu.Unlock()
	in.log.Info("permission rule added", "rule", u.ID, "workspace", u.Workspace, "agent", u.Agent, "tool", u.Tool, "match", u.Match, "until", u.Expires, "by", u.By)
	cp := u
	return &cp, nil
}

// Rules lists the live rules of ws ("" every workspace), oldest first.
func (in *Inbox) Rules(ws string) []Rule {
	now := time.Now()
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []Rule
	for _, u := range in.rules {
		if !now.After(u.Expires) && (ws == "" || u.Workspace == ws) {
			out = append(out, *u)
		}
	}
	return out
}

// RemoveRule ends a rule now.
func (in *Inbox) RemoveRule(ws, id string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := len(in.rules)
	in.rules = slices.DeleteFunc(in.rules, func(u *Rule) bool { return u.ID == id && (ws == "" || u.Workspace == ws) })
	if len(in.rules) == n {
		return hub.Errorf("remove permission rule", hub.NotFound, "no permission rule %q", id)
	}
	return nil
}

// ruleFor is the live rule that allows r, counted as used, or nil.
func (in *Inbox) ruleFor(r *Request) *Rule {
	now := time.Now()
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, u := range in.rules {
		if u.matches(r, now) {
			u.Uses++
			cp := *u
			return &cp
		}
	}
	return nil
}

// applyRules allows r, just filed, if a rule says so.
func (in *Inbox) applyRules(ctx context.Context, r *Request) *Request {
	u := in.ruleFor(r)
	if u == nil {
		return r
	}
	d, err := in.settle(ctx, "permission rule", r.Workspace, r.ID, Allowed, Decision{Allow: true,
		By: fmt.Sprintf("rule %s (%s, until %s)", u.ID, u.By, u.Expires.Format("15:04:05Z"))})
	if err != nil {
		// Someone decided first (it cannot be, so soon; but the first
		// decision wins): the request stands as it is.
		in.log.Warn("permission rule: settle", "request", r.ID, "rule", u.ID, "err", err)
		return r
	}
	return d
}
