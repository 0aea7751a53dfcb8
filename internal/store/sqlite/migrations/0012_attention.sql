-- Doors and attention receipts, schema version 12.
--
-- A message may have a time to live (expires_at, 0: none) and a delivery
-- mode (deliver, '': its priority's default); expiry_reported is set once the
-- sweep that bounces what nothing reached has looked at it.
ALTER TABLE messages ADD COLUMN expires_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN expiry_reported INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN deliver TEXT NOT NULL DEFAULT '';
CREATE INDEX messages_expiry_due ON messages (expires_at)
	WHERE expires_at > 0 AND expiry_reported = 0;

-- seen_at: the recipient's session started a turn with the copy; a bounced
-- copy left the inbox unread (read_at is set with bounced_at, so every
-- inbox and purge condition treats it as done) for bounce_reason.
ALTER TABLE deliveries ADD COLUMN seen_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN bounced_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN bounce_reason TEXT NOT NULL DEFAULT '';
-- Copies a door's letter told of, until their session is seen with them.
CREATE INDEX deliveries_unseen ON deliveries (workspace, recipient)
	WHERE seen_at = 0 AND woke_via LIKE 'door:%';
CREATE INDEX deliveries_bounced ON deliveries (workspace, bounced_at)
	WHERE bounced_at > 0;

-- A door: a running client session's own way in, registered by the session
-- for its agent. One per workspace, agent, kind and client session; token
-- is the session's credential, never shown.
CREATE TABLE doors (
	id           TEXT PRIMARY KEY,
	workspace    TEXT    NOT NULL,
	agent        TEXT    NOT NULL,
	kind         TEXT    NOT NULL,
	session      TEXT    NOT NULL,
	address      TEXT    NOT NULL,
	token        TEXT    NOT NULL DEFAULT '',
	owner        TEXT    NOT NULL DEFAULT '',
	host         TEXT    NOT NULL DEFAULT '',
	uid          INTEGER NOT NULL DEFAULT -1,
	opened_at    INTEGER NOT NULL,
	refreshed_at INTEGER NOT NULL,
	closed_at    INTEGER NOT NULL DEFAULT 0,
	close_reason TEXT    NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX doors_session ON doors (workspace, agent, kind, session);
CREATE INDEX doors_by_agent ON doors (workspace, agent, opened_at);
