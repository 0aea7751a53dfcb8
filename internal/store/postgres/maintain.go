package postgres

import (
	"context"

	"github.com/parley-dev/parley/internal/hub"
)

// Pruning (hub.Purger). Copies and checks are PostgreSQL's own (pg_dump,
// amcheck): the database is shared by every daemon that uses it, and its
// operator already has them.

// purgeBatch bounds the messages one purge transaction deletes, so that a
// large purge holds its row locks for milliseconds at a time.
const purgeBatch = 500

// purge deletes, in one statement (so one transaction), the messages of the
// next batch after $1 created before $2 that have no unread copy, and none
// that awaits an ack it asked for (unless its deadline is before $4 and its
// sender was told: hub.PurgeQuery), and none sent with an idempotency key
// after $5, with their
// deliveries (so no delivery outlives its message). It returns the last seq
// of the batch, its size, and what it deleted.
const purge = `
WITH batch AS (
	SELECT seq FROM messages WHERE seq > $1 AND created_at < $2 ORDER BY seq LIMIT $3
), doomed AS (
	SELECT m.seq FROM messages m JOIN batch b ON b.seq = m.seq
	WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.message_seq = m.seq AND d.read_at IS NULL)
	AND (m.idem_key IS NULL OR m.created_at < $5)
	AND NOT (m.ack_required AND EXISTS (SELECT 1 FROM deliveries d WHERE d.message_seq = m.seq AND d.acked_at IS NULL)
		AND NOT (m.ack_reported AND m.ack_deadline IS NOT NULL AND m.ack_deadline < $4))
	FOR UPDATE OF m
), gone_deliveries AS (
	DELETE FROM deliveries WHERE message_seq IN (SELECT seq FROM doomed) RETURNING 1
), gone_messages AS (
	DELETE FROM messages WHERE seq IN (SELECT seq FROM doomed) RETURNING 1
)
SELECT coalesce((SELECT max(seq) FROM batch), 0), (SELECT count(*) FROM batch),
	(SELECT count(*) FROM gone_messages), (SELECT count(*) FROM gone_deliveries)`

// Purge deletes the read messages created before q.Before that await no
// ack (hub.PurgeQuery), a batch per transaction. Daemons sharing the database may purge at once: a row one
// deletes, the other finds gone.
func (db *DB) Purge(ctx context.Context, q hub.PurgeQuery) (hub.PurgeResult, error) {
	const op = "purge"
	var res hub.PurgeResult
	keyed := q.KeyedBefore
	if keyed.IsZero() || keyed.After(q.Before) {
		keyed = q.Before
	}
	after := int64(0)
	for {
		var last, n, m, d int64
		if err := db.pool.QueryRow(ctx, purge, after, q.Before.UTC(), purgeBatch, q.AckGivenUp.UTC(), keyed.UTC()).Scan(&last, &n, &m, &d); err != nil {
			return res, db.mapErr(ctx, op, err)
		}
		res.Messages += m
		res.Deliveries += d
		if n < purgeBatch {
			return res, nil
		}
		after = last
	}
}
