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

// AckGrace is how long after its ack deadline a purge keeps a read message
// that still lacks acknowledgements, once its sender was told (the overdue
// notice): then the acks are given up on.
const AckGrace = 7 * 24 * time.Hour

// PurgeQuery selects what a purge deletes: the messages created before
// Before that every recipient has read, except those that ask for
// acknowledgements and lack some, which stay until they are all in, or until
// their deadline is before AckGivenUp and their sender was told. A message
// sent with an idempotency key is kept until KeyedBefore too (if it is
// earlier than Before): its key names its send for IdempotencyWindow, and a
// retry must find it however short the retention.
type PurgeQuery struct {
	Before      time.Time
	AckGivenUp  time.Time
	KeyedBefore time.Time // zero: Before
}

// Purge deletes the read messages of every workspace created before cutoff,
// but keeps those that await acknowledgements (PurgeQuery, AckGrace).
func (h *Hub) Purge(ctx context.Context, cutoff time.Time) (PurgeResult, error) {
	res, err := h.store.Purge(ctx, PurgeQuery{Before: cutoff, AckGivenUp: h.now().Add(-AckGrace),
		KeyedBefore: h.now().Add(-IdempotencyWindow)})
	return res, withOp("purge", err)
}
