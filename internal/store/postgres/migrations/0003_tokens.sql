-- Schema version 3: agent tokens (internal/token); only the SHA-256 of each
-- secret is kept.
CREATE TABLE agent_tokens (
	id         text        PRIMARY KEY,
	hash       bytea       NOT NULL UNIQUE,
	workspace  text        NOT NULL,
	agent      text        NOT NULL,
	created_at timestamptz NOT NULL
);
