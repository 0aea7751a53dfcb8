-- Schema version 16: daemons' heartbeats, and what each daemon holds, so that
-- a surviving daemon gives back what a dead one held (liveness.go).
-- beat_at is the store's clock (now()), so daemons on machines whose clocks
-- disagree still agree on who is late; dead_after is each daemon's own
-- bound, set by its beats.
CREATE TABLE daemons (
	node       text        PRIMARY KEY,
	host       text        NOT NULL DEFAULT '',
	started_at timestamptz NOT NULL,
	beat_at    timestamptz NOT NULL,
	dead_after interval    NOT NULL
);
-- The daemon through which the agent was last seen (its session's), and the
-- one through which a reservation was granted or last renewed. NULL: before
-- this version, or on no daemon.
ALTER TABLE agents ADD COLUMN node text;
ALTER TABLE reservations ADD COLUMN node text;
-- No index on them: they change on hot paths (a touch, a renewal), and only
-- a reclaim, rare, looks them up (the leases through deliveries_leased).
