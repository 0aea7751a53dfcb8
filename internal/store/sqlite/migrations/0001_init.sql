-- Parley schema, version 1. Times are UTC unix nanoseconds; 0 means unset.

-- workspaces remembers every workspace ever written to, so that Workspaces() is a
-- few index probes instead of a scan of every message.
CREATE TABLE workspaces (
	name TEXT PRIMARY KEY
) WITHOUT ROWID;

CREATE TABLE agents (
	workspace  TEXT    NOT NULL,
	name       TEXT    NOT NULL,
	role       TEXT    NOT NULL DEFAULT '',
	module     TEXT    NOT NULL DEFAULT '',
	status     TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	last_seen  INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (workspace, name)
) WITHOUT ROWID;

-- seq is the rowid: it orders messages by arrival and keeps deliveries small.
CREATE TABLE messages (
	seq        INTEGER PRIMARY KEY,
	id         TEXT    NOT NULL UNIQUE,
	workspace  TEXT    NOT NULL,
	sender     TEXT    NOT NULL,
	to_addr    TEXT    NOT NULL,
	content    TEXT    NOT NULL,
	payload    BLOB,
	priority   TEXT    NOT NULL,
	reply_to   TEXT    NOT NULL DEFAULT '',
	thread_id  TEXT    NOT NULL DEFAULT '',
	metadata   TEXT,
	created_at INTEGER NOT NULL
);
CREATE INDEX messages_by_workspace ON messages (workspace, seq);
CREATE INDEX messages_by_thread ON messages (workspace, thread_id, seq);
CREATE INDEX messages_by_sender ON messages (workspace, sender, seq);

-- One row per recipient of a message; read_at is that recipient's read state.
CREATE TABLE deliveries (
	id          INTEGER PRIMARY KEY,
	workspace   TEXT    NOT NULL,
	recipient   TEXT    NOT NULL,
	message_seq INTEGER NOT NULL REFERENCES messages (seq),
	rank        INTEGER NOT NULL,
	read_at     INTEGER
);
-- The inbox: only unread rows, in inbox order. Consume and Unread touch nothing
-- else, so they stay fast however much history piles up.
CREATE INDEX deliveries_unread ON deliveries (workspace, recipient, rank, id)
	WHERE read_at IS NULL;
-- One delivery per recipient of a message; also how History finds whether a
-- message went to an agent. Keyed by message first so that a broadcast appends
-- to the end of the index instead of touching one leaf page per recipient.
CREATE UNIQUE INDEX deliveries_by_message ON deliveries (message_seq, recipient);

CREATE TABLE groups (
	workspace   TEXT    NOT NULL,
	name        TEXT    NOT NULL,
	description TEXT    NOT NULL DEFAULT '',
	created_by  TEXT    NOT NULL DEFAULT '',
	created_at  INTEGER NOT NULL,
	PRIMARY KEY (workspace, name)
) WITHOUT ROWID;

-- Members keep a rowid so that they list in the order they were added.
CREATE TABLE group_members (
	workspace  TEXT NOT NULL,
	group_name TEXT NOT NULL,
	type       TEXT NOT NULL,
	member_id  TEXT NOT NULL,
	UNIQUE (workspace, group_name, type, member_id),
	FOREIGN KEY (workspace, group_name) REFERENCES groups (workspace, name) ON DELETE CASCADE
);
