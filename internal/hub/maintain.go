package hub

import (
	"context"
	"time"
)

// Purger is a store that prunes old messages. It is apart from Store so that
// a store may offer it or not; the daemon asks by type assertion.
type Purger interface {
	// Purge deletes the messages created before cutoff that every recipient
	// has read, with their deliveries, a bounded batch per transaction so
	// that sends are not held up. Unread messages are kept, however old.
	Purge(ctx context.Context, cutoff time.Time) (PurgeResult, error)
}

// Maintainer is what a store in one file offers operators besides pruning: a
// consistent copy and a full check. (A PostgreSQL database has pg_dump and
// its own checks, and is shared by every daemon that uses it.)
type Maintainer interface {
	Purger
	// Backup writes a consistent copy of the store to path, a file that must
	// not exist yet.
	Backup(ctx context.Context, path string) error
	// Check runs the store's full integrity check and returns its findings
	// (none: healthy).
	Check(ctx context.Context) ([]string, error)
}

// PurgeResult is what a purge removed.
type PurgeResult struct {
	Messages   int64
	Deliveries int64
}

// Purge deletes the read messages of every workspace created before cutoff
// (Purger), when the store can.
func (h *Hub) Purge(ctx context.Context, cutoff time.Time) (PurgeResult, error) {
	m, ok := h.store.(Purger)
	if !ok {
		return PurgeResult{}, Errorf("purge", Unavailable, "this store cannot purge")
	}
	res, err := m.Purge(ctx, cutoff)
	return res, withOp("purge", err)
}
