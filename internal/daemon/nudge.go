package daemon

import (
	"context"

	"github.com/parley-dev/parley/internal/attention"
	"github.com/parley-dev/parley/internal/nudge"
	"github.com/parley-dev/parley/internal/tmux"
)

// startDoorman writes a letter through an agent's client door (Claude
// Code's inbox socket, a Codex thread) when mail comes and the agent is not
// waiting for it; managed agents that the runner wakes itself are left to
// it. It stops with ctx; done is closed once its letters in flight ended.
func (d *Daemon) startDoorman(ctx context.Context) (dm *attention.Doorman, done <-chan struct{}) {
	o := &attention.Options{Logger: d.log.With("subsystem", "doorman"), Host: d.host, Version: d.cfg.Version, CodexResume: d.conf.CodexResume}
	if d.runner != nil {
		o.TakesMail = d.runner.TakesMail
	}
	dm = attention.New(d.hub, o)
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		dm.Run(ctx)
	}()
	return dm, ch
}

// startNudger types notices into idle agents' tmux panes when messages come,
// for agents that asked (mcp serve --nudge tmux) or for all when config.toml
// says nudge = "tmux". The panes come from the open MCP sessions. An agent
// with a door gets its letter instead: tmux is the last way in.
func (d *Daemon) startNudger(ctx context.Context, dm *attention.Doorman) {
	if err := tmux.Unavailable(); err != nil {
		if d.conf.Nudge == "tmux" {
			d.log.Warn("config.toml asks for nudge = \"tmux\": ignored", "err", err)
		}
		return
	}
	n := nudge.New(d.hub, &nudge.Options{
		Logger: d.log.With("subsystem", "nudge"),
		All:    d.conf.Nudge == "tmux",
		Locate: func(ws, agent string) (nudge.Target, bool) {
			if dm.HasDoor(ws, agent) {
				return nudge.Target{}, false
			}
			pane, n, ok := d.ops.TmuxPane(ws, agent)
			return nudge.Target{Socket: pane.Socket, Pane: pane.Pane, Nudge: n}, ok
		},
	})
	go n.Run(ctx)
}
