-- File reservations and message search (issue 15), schema version 5.

-- A reservation is live until expires_at; expired rows are deleted by the next
-- change to the workspace's reservations. Conflict checks read every live row
-- of a workspace (a handful) and match patterns in Go.
CREATE TABLE reservations (
	id         TEXT    PRIMARY KEY,
	workspace  TEXT    NOT NULL,
	agent      TEXT    NOT NULL,
	pattern    TEXT    NOT NULL,
	exclusive  INTEGER NOT NULL,
	reason     TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX reservations_by_workspace ON reservations (workspace, expires_at);

-- What search indexes of a message: its content, the string values of its JSON
-- payload, and its metadata values (not the keys: they are the same on every
-- message and would only dilute the ranking). The last two are extracted once,
-- when the message is stored, into message_search_text: FTS5 cannot read them
-- through json_tree() in a view, because it may not open the JSON functions'
-- virtual tables from inside its own. The payload is kept as a BLOB, which the
-- JSON functions would read as JSONB; CAST makes it text.
CREATE TABLE message_search_text (
	seq      INTEGER PRIMARY KEY REFERENCES messages (seq),
	payload  TEXT,
	metadata TEXT
);

CREATE VIEW messages_search (seq, content, payload, metadata) AS
SELECT m.seq, m.content, t.payload, t.metadata
FROM messages m LEFT JOIN message_search_text t ON t.seq = m.seq;

-- An external-content index over that view: content is not stored twice, and
-- snippet() reads the text back through the view. porter folds word forms
-- together ("parsing" finds "parser"); remove_diacritics makes "resume" find
-- "résumé".
CREATE VIRTUAL TABLE messages_fts USING fts5 (
	content, payload, metadata,
	content = 'messages_search', content_rowid = 'seq',
	tokenize = 'porter unicode61 remove_diacritics 2'
);

-- Triggers keep the index in step with every insert and delete of a message,
-- in the same transaction, whoever does it (a send, a purge, a restore).
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
	INSERT INTO message_search_text (seq, payload, metadata)
	SELECT new.seq,
		CASE WHEN new.payload IS NOT NULL AND json_valid(CAST(new.payload AS TEXT)) THEN
			(SELECT group_concat(value, ' ') FROM json_tree(CAST(new.payload AS TEXT)) WHERE type = 'text')
		END,
		CASE WHEN new.metadata IS NOT NULL AND json_valid(new.metadata) THEN
			(SELECT group_concat(value, ' ') FROM json_each(new.metadata))
		END
	WHERE new.payload IS NOT NULL OR new.metadata IS NOT NULL;
	INSERT INTO messages_fts (rowid, content, payload, metadata)
	SELECT seq, content, payload, metadata FROM messages_search WHERE seq = new.seq;
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
	INSERT INTO messages_fts (messages_fts, rowid, content, payload, metadata)
	SELECT 'delete', old.seq, old.content, t.payload, t.metadata
	FROM (SELECT 1) LEFT JOIN message_search_text t ON t.seq = old.seq;
	DELETE FROM message_search_text WHERE seq = old.seq;
END;
-- Messages are never edited in place; should one be, the index follows.
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, payload, metadata ON messages BEGIN
	INSERT INTO messages_fts (messages_fts, rowid, content, payload, metadata)
	SELECT 'delete', old.seq, old.content, t.payload, t.metadata
	FROM (SELECT 1) LEFT JOIN message_search_text t ON t.seq = old.seq;
	DELETE FROM message_search_text WHERE seq = old.seq;
	INSERT INTO message_search_text (seq, payload, metadata)
	SELECT new.seq,
		CASE WHEN new.payload IS NOT NULL AND json_valid(CAST(new.payload AS TEXT)) THEN
			(SELECT group_concat(value, ' ') FROM json_tree(CAST(new.payload AS TEXT)) WHERE type = 'text')
		END,
		CASE WHEN new.metadata IS NOT NULL AND json_valid(new.metadata) THEN
			(SELECT group_concat(value, ' ') FROM json_each(new.metadata))
		END
	WHERE new.payload IS NOT NULL OR new.metadata IS NOT NULL;
	INSERT INTO messages_fts (rowid, content, payload, metadata)
	SELECT seq, content, payload, metadata FROM messages_search WHERE seq = new.seq;
END;

-- Messages stored before this version.
INSERT INTO message_search_text (seq, payload, metadata)
SELECT seq,
	CASE WHEN payload IS NOT NULL AND json_valid(CAST(payload AS TEXT)) THEN
		(SELECT group_concat(value, ' ') FROM json_tree(CAST(payload AS TEXT)) WHERE type = 'text')
	END,
	CASE WHEN metadata IS NOT NULL AND json_valid(metadata) THEN
		(SELECT group_concat(value, ' ') FROM json_each(metadata))
	END
FROM messages WHERE payload IS NOT NULL OR metadata IS NOT NULL;
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
-- The rank that ORDER BY rank sorts by: BM25 with content weighing most, then
-- payload text, then metadata values.
INSERT INTO messages_fts (messages_fts, rank) VALUES ('rank', 'bm25(4.0, 2.0, 1.0)');
