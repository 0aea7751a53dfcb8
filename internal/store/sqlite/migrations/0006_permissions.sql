-- The permission inbox (internal/permission), schema version 6. data keeps
-- the request as filed (JSON); state and decision change once, from pending,
-- so that the first decision wins.

CREATE TABLE permissions (
	id           TEXT    PRIMARY KEY,
	workspace    TEXT    NOT NULL,
	requested_at INTEGER NOT NULL,
	state        TEXT    NOT NULL,
	decision     TEXT,
	data         TEXT    NOT NULL
) WITHOUT ROWID;

CREATE INDEX permissions_pending ON permissions (workspace, requested_at) WHERE state = 'pending';
