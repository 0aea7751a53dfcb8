-- Schema version 22: the daemons' relayed events, kept a while beside their
-- NOTIFY, so that a daemon whose listening connection was down (PostgreSQL
-- restarted, a network cut) catches up on what it missed, in order, from
-- the last event it saw (notify.go). Each notification's payload starts
-- with its row's seq. Rows older than a few minutes are deleted.
CREATE TABLE relay_events (
	seq bigserial PRIMARY KEY,
	at timestamptz NOT NULL DEFAULT now(),
	payload text NOT NULL
);
CREATE INDEX relay_events_by_at ON relay_events (at);
