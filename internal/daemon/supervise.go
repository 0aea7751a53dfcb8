package daemon

import (
	"context"
	"slices"

	"github.com/parley-dev/parley/internal/config"
	"github.com/parley-dev/parley/internal/notify"
	"github.com/parley-dev/parley/internal/supervise"
)

// openLadder prepares the escalation ladder ([escalation] in config.toml)
// over the hub's events, the permission inbox, the runner and push
// notifications. Run runs it.
func (d *Daemon) openLadder(conf *config.Config) {
	every, permAfter := conf.Escalation.EscalationDurations()
	o := supervise.Options{Every: every, PermissionAfter: permAfter, Lead: conf.Escalation.Lead,
		OnStall: supervise.Step(conf.Escalation.OnStall), Logger: d.log.With("subsystem", "escalation")}
	if d.runner != nil {
		o.Managed = managedAgents{d}
	}
	if d.notices != nil {
		o.Pusher = pusher{ns: d.notices, eps: config.NotifyEndpoints(conf.Notify)}
	}
	d.ladder = supervise.New(d.hub, d.perms, o)
}

// managedAgents is the runner as the ladder reaches it.
type managedAgents struct{ d *Daemon }

func (m managedAgents) Owner(ws, name string) (string, bool) {
	a, err := m.d.runner.Get(ws, name)
	if err != nil {
		return "", false
	}
	return a.Owner, true
}

func (m managedAgents) Cancel(ctx context.Context, ws, id string) error {
	_, err := m.d.runner.Cancel(ctx, ws, id)
	return err
}

func (m managedAgents) Prompt(ctx context.Context, ws, id, prompt string) error {
	_, err := m.d.runner.Prompt(ctx, ws, id, prompt)
	return err
}

// pusher is push notifications as the ladder reaches them.
type pusher struct {
	ns  *notices
	eps []notify.Endpoint
}

func (p pusher) Push(kind, ws, agent, id, title, message string) bool {
	k := notify.Kind(kind)
	taken := false
	for _, e := range p.eps {
		taken = taken || e.Kinds == nil || slices.Contains(e.Kinds, k)
	}
	if !taken {
		return false
	}
	p.ns.n.Notify(notify.Notice{Kind: k, Workspace: ws, Agent: agent, ID: id, Title: title, Message: message})
	return true
}
