-- Leased deliveries and acknowledgements, version 4 (as SQLite's 0004).
--
-- A delivery is in its recipient's inbox while read_at IS NULL AND reader IS
-- NULL (queued, or redelivered when delivery_count > 0); handed to a reader
-- (delivered) while reader IS NOT NULL, until lease_until; read once read_at is
-- set; acked once acked_at is set.
ALTER TABLE deliveries
	ADD COLUMN reader         text,
	ADD COLUMN lease_until    timestamptz,
	ADD COLUMN delivered_at   timestamptz,
	ADD COLUMN delivery_count integer NOT NULL DEFAULT 0,
	ADD COLUMN acked_at       timestamptz;

-- Copies read before this version were handed out once, when they were read.
UPDATE deliveries SET delivery_count = 1, delivered_at = read_at WHERE read_at IS NOT NULL;

DROP INDEX deliveries_unread;
CREATE INDEX deliveries_inbox ON deliveries (workspace, recipient, rank, id)
	WHERE read_at IS NULL AND reader IS NULL;
-- Leases in flight: few at any time, found by reader or by end.
CREATE INDEX deliveries_leased ON deliveries (reader, lease_until)
	WHERE reader IS NOT NULL;

-- ack_reported is set once the sweep that tells senders of overdue acks has
-- looked at the message.
ALTER TABLE messages
	ADD COLUMN ack_required boolean NOT NULL DEFAULT false,
	ADD COLUMN ack_deadline timestamptz,
	ADD COLUMN ack_reported boolean NOT NULL DEFAULT false;
CREATE INDEX messages_ack_due ON messages (ack_deadline)
	WHERE ack_deadline IS NOT NULL AND NOT ack_reported;
CREATE INDEX messages_ack_deadline ON messages (workspace, ack_deadline)
	WHERE ack_deadline IS NOT NULL;
