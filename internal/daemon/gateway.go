package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/parley-dev/parley/internal/config"
	"github.com/parley-dev/parley/internal/gateway"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/safefile"
)

// configPoll is how often the daemon looks for a changed config.toml.
const configPoll = time.Second

// gatewayState is the daemon's side of the gateway: the manager, and
// config.toml, which the daemon alone writes (ops.Config) and reloads when it
// changes.
type gatewayState struct {
	mgr  *gateway.Manager
	path string // config.toml
	log  *slog.Logger

	mu    sync.Mutex // serializes reloads and edits
	stamp fileStamp  // config.toml as last read
}

type fileStamp struct {
	mod  time.Time
	size int64
	ok   bool
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), ok: true}
}

// openGateway starts the upstreams of conf.
func (d *Daemon) openGateway(conf *config.Config) {
	d.gw = &gatewayState{
		mgr:   gateway.New(&gateway.Options{Logger: d.log.With("subsystem", "gateway"), Version: d.cfg.Version}),
		path:  d.paths.Config,
		log:   d.log,
		stamp: stampOf(d.paths.Config),
	}
	d.gw.mgr.Apply(conf.Upstreams)
}

// Reload reads config.toml again and applies its upstreams; other settings
// take effect at the next start. A file that does not parse changes nothing.
func (g *gatewayState) Reload() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reloadLocked()
}

func (g *gatewayState) reloadLocked() error {
	st := stampOf(g.path)
	conf, err := config.Load(g.path)
	g.stamp = st // a bad file is not retried every second
	if err != nil {
		return hub.Errorf("reload", hub.Invalid, "%v (nothing changed)", err)
	}
	g.mgr.Apply(conf.Upstreams)
	g.log.Info("config reloaded", "upstreams", len(conf.Upstreams))
	return nil
}

// EditUpstreams edits config.toml's upstream tables in place, keeping the
// rest of the user's text and comments, and applies the result.
func (g *gatewayState) EditUpstreams(edit func(*config.Config) error) error {
	const op = "edit config.toml"
	g.mu.Lock()
	defer g.mu.Unlock()
	text, err := os.ReadFile(g.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: %w", op, err)
	}
	out, err := config.EditUpstreams(text, g.path, edit)
	if err != nil {
		if hub.KindOf(err) == hub.Internal { // the file's or the edit's problem, for the user
			err = hub.Errorf(op, hub.Invalid, "%v", err)
		}
		return err
	}
	if err := safefile.WriteFile(g.path, out, 0o600); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return g.reloadLocked()
}

// watchConfig reloads config.toml when its modification time or size changes.
func (d *Daemon) watchConfig(ctx context.Context) {
	t := time.NewTicker(configPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.gw.mu.Lock()
		changed := stampOf(d.paths.Config) != d.gw.stamp
		d.gw.mu.Unlock()
		if !changed {
			continue
		}
		if err := d.gw.Reload(); err != nil {
			d.log.Error("config.toml changed but cannot be used", "err", err)
		}
	}
}
