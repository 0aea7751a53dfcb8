-- Prefix search (issue 15), schema version 8.
--
-- messages_fts stems with porter, on the query too, so a prefix is stemmed
-- before it is matched: deploy* became deploi*, which "deployment" (indexed
-- as deploy) does not start with. messages_words indexes the same text
-- unstemmed; prefix terms are matched there. Like messages_fts it reads its
-- text through the messages_search view and stores only the index. It costs
-- a send about a third more store CPU (a second index written per commit);
-- detail=none was no cheaper, and would lose phrase prefixes.
CREATE VIRTUAL TABLE messages_words USING fts5 (
	content, payload, metadata,
	content = 'messages_search', content_rowid = 'seq',
	tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO messages_words (messages_words, rank) VALUES ('rank', 'bm25(4.0, 2.0, 1.0)');

-- The triggers of version 5, now keeping both indexes. One trigger per
-- event, so that message_search_text is written before either index reads
-- it (SQLite does not promise an order among triggers).
DROP TRIGGER messages_fts_insert;
DROP TRIGGER messages_fts_delete;
DROP TRIGGER messages_fts_update;
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
	INSERT INTO messages_words (rowid, content, payload, metadata)
	SELECT seq, content, payload, metadata FROM messages_search WHERE seq = new.seq;
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
	INSERT INTO messages_fts (messages_fts, rowid, content, payload, metadata)
	SELECT 'delete', old.seq, old.content, t.payload, t.metadata
	FROM (SELECT 1) LEFT JOIN message_search_text t ON t.seq = old.seq;
	INSERT INTO messages_words (messages_words, rowid, content, payload, metadata)
	SELECT 'delete', old.seq, old.content, t.payload, t.metadata
	FROM (SELECT 1) LEFT JOIN message_search_text t ON t.seq = old.seq;
	DELETE FROM message_search_text WHERE seq = old.seq;
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, payload, metadata ON messages BEGIN
	INSERT INTO messages_fts (messages_fts, rowid, content, payload, metadata)
	SELECT 'delete', old.seq, old.content, t.payload, t.metadata
	FROM (SELECT 1) LEFT JOIN message_search_text t ON t.seq = old.seq;
	INSERT INTO messages_words (messages_words, rowid, content, payload, metadata)
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
	INSERT INTO messages_words (rowid, content, payload, metadata)
	SELECT seq, content, payload, metadata FROM messages_search WHERE seq = new.seq;
END;

-- Messages stored before this version.
INSERT INTO messages_words (messages_words) VALUES ('rebuild');
