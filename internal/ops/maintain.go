package ops

import (
	"context"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/config"
	"github.com/parley-dev/parley/internal/hub"
)

// Purge deletes, in every workspace, the messages older than in.OlderThan
// that every recipient has read; unread ones stay however old, and so do
// those awaiting acks (hub.PurgeQuery). It runs beside the daemon's work, a
// small transaction at a time.
func (o *Ops) Purge(ctx context.Context, c *Caller, in api.PurgeRequest) (api.PurgeResult, error) {
	age, err := config.ParseAge(in.OlderThan)
	if err != nil {
		return api.PurgeResult{}, hub.Errorf("purge", hub.Invalid, "older_than: %v", err)
	}
	cutoff := time.Now().Add(-age).UTC()
	res, err := o.hub.Purge(ctx, cutoff)
	if err != nil {
		return api.PurgeResult{}, err
	}
	return api.PurgeResult{Messages: res.Messages, Deliveries: res.Deliveries, Before: cutoff.Format(time.RFC3339)}, nil
}
