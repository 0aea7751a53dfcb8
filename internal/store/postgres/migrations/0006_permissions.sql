-- Schema version 6: the permission inbox (internal/permission). data keeps the
-- request as filed; state and decision change once, from pending, so that the
-- first decision wins, whichever daemon makes it.
CREATE TABLE permissions (
	id           text        PRIMARY KEY,
	workspace    text        NOT NULL,
	requested_at timestamptz NOT NULL,
	state        text        NOT NULL,
	decision     json,
	data         json        NOT NULL
);
CREATE INDEX permissions_pending ON permissions (workspace, requested_at) WHERE state = 'pending';
