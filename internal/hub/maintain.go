package hub

import (
	"context"
	"time"
)

// PurgeResult is what a purge removed.
type PurgeResult struct {
	Messages   int64
	Deliveries int64
}

// Purge deletes the read messages of every workspace created before cutoff.
func (h *Hub) Purge(ctx context.Context, cutoff time.Time) (PurgeResult, error) {
	res, err := h.store.Purge(ctx, cutoff)
	return res, withOp("purge", err)
}
