-- Schema version 16: a sender's idempotency key names one of its sends
-- (send_message, complete_task), so that a retry finds the first instead of
-- sending again. NULL for a send without one.
ALTER TABLE messages ADD COLUMN idem_key text;
CREATE UNIQUE INDEX messages_by_idem_key ON messages (workspace, sender, idem_key)
	WHERE idem_key IS NOT NULL;
