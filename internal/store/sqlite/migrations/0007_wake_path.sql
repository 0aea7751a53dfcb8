-- The wake path of each delivery, schema version 7: which mechanism first
-- reached the recipient with the message (wait, check, channel, hook, tmux,
-- managed) and when; '' and 0 until one did.
ALTER TABLE deliveries ADD COLUMN woke_via TEXT NOT NULL DEFAULT '';
ALTER TABLE deliveries ADD COLUMN woke_at INTEGER NOT NULL DEFAULT 0;
