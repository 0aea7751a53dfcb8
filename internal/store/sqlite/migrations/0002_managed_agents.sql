-- Managed agents (internal/runner), schema version 2. Each row keeps the
-- runner's record as JSON in data; the other columns are its keys.

CREATE TABLE managed_agents (
	id         TEXT    PRIMARY KEY,
	workspace  TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	data       TEXT    NOT NULL
) WITHOUT ROWID;

CREATE TABLE managed_runs (
	agent_id TEXT    NOT NULL,
	seq      INTEGER NOT NULL,
	state    TEXT    NOT NULL,
	data     TEXT    NOT NULL,
	PRIMARY KEY (agent_id, seq)
) WITHOUT ROWID;

CREATE INDEX managed_runs_open ON managed_runs (state) WHERE state IN ('queued', 'running');

-- seq counts from 1 per agent without gaps, so max(seq) is the timeline's length.
CREATE TABLE managed_events (
	agent_id TEXT    NOT NULL,
	seq      INTEGER NOT NULL,
	data     TEXT    NOT NULL,
	PRIMARY KEY (agent_id, seq)
) WITHOUT ROWID;
