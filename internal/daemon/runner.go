package daemon

import (
	"context"

	"github.com/parley-dev/parley/internal/config"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/permission"
	"github.com/parley-dev/parley/internal/runner"
)

// openRunner opens the permission inbox and starts the managed-agent runner.
func (d *Daemon) openRunner(ctx context.Context, conf *config.Config) error {
	provs := map[string]runner.ProviderConfig{}
	for name, p := range conf.Providers {
		provs[name] = runner.ProviderConfig{Kind: p.Kind, Command: p.Command, Args: p.Args, Env: p.Env, Steer: p.Steer,
			Budget: runner.Budget{MaxTurns: p.MaxTurns, MaxCostUSD: p.MaxCost, MaxDuration: p.ProviderMaxDuration()}}
	}
	permTimeout, grace := conf.RunnerDurations()
	d.perms = permission.New(d.db, &permission.Options{Timeout: permTimeout, Logger: d.log.With("subsystem", "permissions")})
	d.perms.Subscribe(d.observePermission)
	rn, err := runner.New(d.hub, d.db, runner.Options{
		Home: d.paths.Home, Providers: provs, PermissionTimeout: permTimeout, CancelGrace: grace,
		Permissions: d.perms, Logger: d.log.With("subsystem", "runner"), Observer: d.observeRunner,
		// The person who runs the daemon hears of loops of agents that have
		// no owner of their own.
		Owner:       hub.HumanPrefix + home.UserName(),
		MaxAutoHops: conf.MaxAutoHops, AutoTurnsPerMinute: conf.AutoTurnsPerMinute,
		WorkspaceMaxCost: conf.Budgets.WorkspaceMaxCost, MaxLaunches: conf.Budgets.MaxLaunches,
	})
	if err != nil {
		return err
	}
	if err := rn.Start(ctx); err != nil {
		return err
	}
	d.runner = rn
	d.residentAgents()
	return nil
}
