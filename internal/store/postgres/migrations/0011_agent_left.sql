-- Schema version 11: when an agent's last session on a daemon ended, so that
-- the other daemons on the database show it gone at once rather than when its
-- last-seen time ages out (hub.PresenceStore). NULL: it has not left, or came
-- back (a session opened again).
ALTER TABLE agents ADD COLUMN left_at timestamptz;
