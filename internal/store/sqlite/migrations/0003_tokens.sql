-- Agent tokens (internal/token), schema version 3: only the SHA-256 of each
-- secret is kept. Times are UTC unix nanoseconds.
CREATE TABLE agent_tokens (
	id         TEXT    PRIMARY KEY,
	hash       BLOB    NOT NULL UNIQUE,
	workspace  TEXT    NOT NULL,
	agent      TEXT    NOT NULL,
	created_at INTEGER NOT NULL
) WITHOUT ROWID;
