-- Leased deliveries and acknowledgements, schema version 4.
--
-- A delivery is in its recipient's inbox while read_at IS NULL AND reader IS
-- NULL (queued, or redelivered when delivery_count > 0); handed to a reader
-- (delivered) while reader IS NOT NULL, until lease_until; read once read_at is
-- set; acked once acked_at is set.
ALTER TABLE deliveries ADD COLUMN reader TEXT;
ALTER TABLE deliveries ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN delivered_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN delivery_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN acked_at INTEGER NOT NULL DEFAULT 0;

-- Copies read before this version were handed out once, when they were read.
UPDATE deliveries SET delivery_count = 1, delivered_at = read_at WHERE read_at IS NOT NULL;

-- The inbox, as before, without the copies out on lease.
DROP INDEX deliveries_unread;
CREATE INDEX deliveries_inbox ON deliveries (workspace, recipient, rank, id)
	WHERE read_at IS NULL AND reader IS NULL;
-- Leases in flight: few at any time, found by reader (confirm, release) or by
-- end (expiry).
CREATE INDEX deliveries_leased ON deliveries (reader, lease_until)
	WHERE reader IS NOT NULL;

-- ack_deadline is 0 when there is none; ack_reported is set once the sweep
-- that tells senders of overdue acks has looked at the message.
ALTER TABLE messages ADD COLUMN ack_required INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN ack_deadline INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN ack_reported INTEGER NOT NULL DEFAULT 0;
CREATE INDEX messages_ack_due ON messages (ack_deadline)
	WHERE ack_deadline > 0 AND ack_reported = 0;
CREATE INDEX messages_ack_deadline ON messages (workspace, ack_deadline)
	WHERE ack_deadline > 0;
