-- The wake path of each delivery (as SQLite's 0007): which mechanism first
-- reached the recipient with the message (wait, check, channel, hook, tmux,
-- managed) and when; '' and NULL until one did.
ALTER TABLE deliveries
	ADD COLUMN woke_via text NOT NULL DEFAULT '',
	ADD COLUMN woke_at  timestamptz;
