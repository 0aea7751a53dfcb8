-- Parley schema on PostgreSQL, version 1: the hub's state (as SQLite's 0001) and
-- the runner's managed agents (as SQLite's 0002). Unset times are NULL.

-- workspaces remembers every workspace ever written to, so that Workspaces() is a
-- few index probes instead of a scan of every message.
CREATE TABLE workspaces (
	name text PRIMARY KEY
);

CREATE TABLE agents (
	workspace  text        NOT NULL,
	name       text        NOT NULL,
	role       text        NOT NULL DEFAULT '',
	module     text        NOT NULL DEFAULT '',
	status     text        NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL,
	last_seen  timestamptz,
	PRIMARY KEY (workspace, name)
);

-- seq orders messages by arrival and keeps deliveries small.
CREATE TABLE messages (
	seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id         text        NOT NULL UNIQUE,
	workspace  text        NOT NULL,
	sender     text        NOT NULL,
	to_addr    text        NOT NULL,
	content    text        NOT NULL,
	payload    json, -- json, not jsonb: the sender's bytes are kept exactly
	priority   text        NOT NULL,
	reply_to   text        NOT NULL DEFAULT '',
	thread_id  text        NOT NULL DEFAULT '',
	metadata   jsonb,
	created_at timestamptz NOT NULL
);
CREATE INDEX messages_by_workspace ON messages (workspace, seq);
CREATE INDEX messages_by_thread ON messages (workspace, thread_id, seq);
CREATE INDEX messages_by_sender ON messages (workspace, sender, seq);

-- One row per recipient of a message; read_at is that recipient's read state.
CREATE TABLE deliveries (
	id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	workspace   text     NOT NULL,
	recipient   text     NOT NULL,
	message_seq bigint   NOT NULL REFERENCES messages (seq),
	rank        smallint NOT NULL,
	read_at     timestamptz
);
-- The inbox: only unread rows, in inbox order.
CREATE INDEX deliveries_unread ON deliveries (workspace, recipient, rank, id)
	WHERE read_at IS NULL;
CREATE UNIQUE INDEX deliveries_by_message ON deliveries (message_seq, recipient);

CREATE TABLE groups (
	workspace   text        NOT NULL,
	name        text        NOT NULL,
	description text        NOT NULL DEFAULT '',
	created_by  text        NOT NULL DEFAULT '',
	created_at  timestamptz NOT NULL,
	PRIMARY KEY (workspace, name)
);

-- Members keep an id so that they list in the order they were added.
CREATE TABLE group_members (
	id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	workspace  text NOT NULL,
	group_name text NOT NULL,
	type       text NOT NULL,
	member_id  text NOT NULL,
	UNIQUE (workspace, group_name, type, member_id),
	FOREIGN KEY (workspace, group_name) REFERENCES groups (workspace, name) ON DELETE CASCADE
);

-- Managed agents (internal/runner): each row keeps the runner's record as JSON in
-- data (json, not jsonb: decoded as written); the other columns are its keys.
CREATE TABLE managed_agents (
	id         text        PRIMARY KEY,
	workspace  text        NOT NULL,
	created_at timestamptz NOT NULL,
	data       json        NOT NULL
);

CREATE TABLE managed_runs (
	agent_id text   NOT NULL,
	seq      bigint NOT NULL,
	state    text   NOT NULL,
	data     json   NOT NULL,
	PRIMARY KEY (agent_id, seq)
);
CREATE INDEX managed_runs_open ON managed_runs (state) WHERE state IN ('queued', 'running');

-- seq counts from 1 per agent without gaps, so max(seq) is the timeline's length.
CREATE TABLE managed_events (
	agent_id text   NOT NULL,
	seq      bigint NOT NULL,
	data     json   NOT NULL,
	PRIMARY KEY (agent_id, seq)
);
