-- Doors and attention receipts, schema version 16 (as SQLite's 0012).
--
-- A message may have a time to live (expires_at, NULL: none) and a delivery
-- mode (deliver, '': its priority's default); expiry_reported is set once the
-- sweep that bounces what nothing reached has looked at it.
ALTER TABLE messages
	ADD COLUMN expires_at      timestamptz,
	ADD COLUMN expiry_reported boolean NOT NULL DEFAULT false,
	ADD COLUMN deliver         text    NOT NULL DEFAULT '';
CREATE INDEX messages_expiry_due ON messages (expires_at)
	WHERE expires_at IS NOT NULL AND NOT expiry_reported;

-- seen_at: the recipient's session started a turn with the copy; a bounced
-- copy left the inbox unread (read_at is set with bounced_at, so every
-- inbox and purge condition treats it as done) for bounce_reason.
ALTER TABLE deliveries
	ADD COLUMN seen_at       timestamptz,
	ADD COLUMN bounced_at    timestamptz,
	ADD COLUMN bounce_reason text NOT NULL DEFAULT '';
CREATE INDEX deliveries_unseen ON deliveries (workspace, recipient)
	WHERE seen_at IS NULL AND woke_via LIKE 'door:%';
CREATE INDEX deliveries_bounced ON deliveries (workspace, bounced_at)
	WHERE bounced_at IS NOT NULL;

-- A door: a running client session's own way in, registered by the session
-- for its agent. One per workspace, agent, kind and client session; token
-- is the session's credential, never shown; host and uid say whose daemon
-- may write it.
CREATE TABLE doors (
	id           text PRIMARY KEY,
	workspace    text        NOT NULL,
	agent        text        NOT NULL,
	kind         text        NOT NULL,
	session      text        NOT NULL,
	address      text        NOT NULL,
	token        text        NOT NULL DEFAULT '',
	owner        text        NOT NULL DEFAULT '',
	host         text        NOT NULL DEFAULT '',
	uid          integer     NOT NULL DEFAULT -1,
	opened_at    timestamptz NOT NULL,
	refreshed_at timestamptz NOT NULL,
	closed_at    timestamptz,
	close_reason text        NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX doors_session ON doors (workspace, agent, kind, session);
CREATE INDEX doors_by_agent ON doors (workspace, agent, opened_at);
