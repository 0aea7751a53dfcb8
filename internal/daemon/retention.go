package daemon

import (
	"context"
	"time"

	"github.com/parley-dev/parley/internal/config"
)

// retentionEvery is how often the daemon prunes when retention is set. A
// short retention (tests, demos) is pruned at a 24th of it, but not more
// often than every second.
func retentionEvery(age time.Duration) time.Duration {
	return min(time.Hour, max(time.Second, age/24))
}

// startRetention prunes, at start and then periodically, the messages that
// every recipient has read once they are older than config.toml's retention,
// but not those that await acknowledgements (hub.PurgeQuery).
// Purge works in small transactions, so sends go on meanwhile.
func (d *Daemon) startRetention(ctx context.Context) {
	if d.conf.Retention == "" {
		return
	}
	age, err := config.ParseAge(d.conf.Retention)
	if err != nil { // Load checked it; keep the daemon up regardless
		d.log.Error("retention setting ignored", "err", err)
		return
	}
	h := d.hub
	log := d.log.With("subsystem", "retention")
	go func() {
		t := time.NewTicker(retentionEvery(age))
		defer t.Stop()
		for {
			res, err := h.Purge(ctx, time.Now().Add(-age))
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				log.Error("purge failed", "err", err)
			case res.Messages > 0:
				log.Info("purged read messages", "older_than", d.conf.Retention, "messages", res.Messages, "deliveries", res.Deliveries)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}
