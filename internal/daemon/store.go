package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/parley-dev/parley/internal/config"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/permission"
	"github.com/parley-dev/parley/internal/runner"
	"github.com/parley-dev/parley/internal/store/postgres"
	"github.com/parley-dev/parley/internal/store/sqlite"
	"github.com/parley-dev/parley/internal/token"
)

// EnvStore selects the store, over config.toml's store: a postgres:// URL, or
// empty for SQLite in $PARLEY_HOME.
const EnvStore = "PARLEY_STORE"

// store is what the daemon needs of its database: the hub's state, the
// runner's, the agent tokens and the permission inbox's.
type store interface {
	hub.Store
	runner.Store
	token.Store
	permission.Store
}

// openStore opens the store that PARLEY_STORE or config.toml names: PostgreSQL
// for a postgres:// URL, else the SQLite file in the state directory. It
// returns the store's kind and a description without secrets, for status.
func (d *Daemon) openStore(ctx context.Context, conf *config.Config, log *slog.Logger) (store, string, string, error) {
	sel := conf.Store
	if v := os.Getenv(EnvStore); v != "" {
		sel = v
	}
	switch {
	case sel == "" || sel == "sqlite":
		db, err := sqlite.Open(ctx, d.paths.DB, &sqlite.Options{Logger: log})
		if err != nil {
			return nil, "", "", fmt.Errorf("open store: %w", err)
		}
		return db, "sqlite", d.paths.DB, nil
	case postgres.IsURL(sel):
		db, err := postgres.Open(ctx, sel, &postgres.Options{Logger: log, Node: d.node, Host: d.host})
		if err != nil {
			return nil, "", "", err
		}
		return db, "postgres", db.Describe(), nil
	}
	return nil, "", "", fmt.Errorf("open store: %s %q is neither a postgres:// URL nor empty (SQLite)", EnvStore+" or config.toml's store", postgres.Redact(sel))
}

// notifier returns the hub's notifier: the store's, on a store that daemons
// share (PostgreSQL's LISTEN/NOTIFY), else none (SQLite: one daemon per
// database, whose waiters are all local).
func (d *Daemon) notifier() hub.Notifier {
	ns, ok := d.db.(hub.NotifyingStore)
	if !ok {
		return nil
	}
	d.notify = ns.Notifications()
	return d.notify
}

// tokenNotifier is a notifier that also carries agent-token revocations
// between daemons.
type tokenNotifier interface {
	SetTokens(interface {
		Revoked(id string)
		Recheck()
	})
}

// startNotifier runs the notifier until stopNotifier: the hub's events go
// out to the other daemons on the store, and theirs come in (daemonEvents
// acts on those that are not the hub's). Besides events it carries agent
// tokens' revocations.
func (d *Daemon) startNotifier() {
	if d.notify == nil {
		return
	}
	if n, ok := d.notify.(tokenNotifier); ok {
		n.SetTokens(tokenNotices{d})
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.notifyCancel, d.notifyDone = cancel, make(chan struct{})
	go func() {
		defer close(d.notifyDone)
		var wg sync.WaitGroup
		wg.Go(func() { d.heartbeat(ctx) })
		d.notify.Run(ctx, d.hub)
		wg.Wait()
	}()
}

// heartbeat keeps the agents connected here present for the other daemons on
// the store: they see only last_seen, which a quiet session (a long wait)
// would otherwise let age past hub.ActiveWindow.
func (d *Daemon) heartbeat(ctx context.Context) {
	t := time.NewTicker(hub.ActiveWindow / 4)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			d.hub.TouchConnected(ctx)
		case <-ctx.Done():
			return
		}
	}
}

func (d *Daemon) stopNotifier() {
	if d.notifyCancel != nil {
		d.notifyCancel()
		<-d.notifyDone
		d.notifyCancel = nil
	}
}
