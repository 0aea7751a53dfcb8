-- Search indexing in batches (issue 16), schema version 9.
--
-- FTS5 writes out a new index segment whenever a statement or a savepoint
-- ends with rows pending. Indexed from the insert trigger, every message
-- became one segment in each of the two indexes, even inside a group commit
-- (each write there is a savepoint of its own), and merging those segments
-- back together was about 40% of the store's CPU per send. Now the trigger
-- only queues the message in search_pending, and the writer indexes the whole
-- queue with one statement per index just before each COMMIT
-- (DB.indexPending): a search still sees every committed message, and the
-- indexes grow by one segment per group commit.
CREATE TABLE search_pending (seq INTEGER PRIMARY KEY);

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
	INSERT INTO search_pending (seq) VALUES (new.seq);
END;
-- A message still queued is in neither index: deleting it from them would
-- corrupt them (external content), so it only leaves the queue.
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
	INSERT INTO messages_fts (messages_fts, rowid, content, payload, metadata)
	SELECT 'delete', old.seq, old.content, t.payload, t.metadata
	FROM (SELECT 1) LEFT JOIN message_search_text t ON t.seq = old.seq
	WHERE NOT EXISTS (SELECT 1 FROM search_pending WHERE seq = old.seq);
	INSERT INTO messages_words (messages_words, rowid, content, payload, metadata)
	SELECT 'delete', old.seq, old.content, t.payload, t.metadata
	FROM (SELECT 1) LEFT JOIN message_search_text t ON t.seq = old.seq
	WHERE NOT EXISTS (SELECT 1 FROM search_pending WHERE seq = old.seq);
	DELETE FROM search_pending WHERE seq = old.seq;
	DELETE FROM message_search_text WHERE seq = old.seq;
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, payload, metadata ON messages BEGIN
	INSERT INTO messages_fts (messages_fts, rowid, content, payload, metadata)
	SELECT 'delete', old.seq, old.content, t.payload, t.metadata
	FROM (SELECT 1) LEFT JOIN message_search_text t ON t.seq = old.seq
	WHERE NOT EXISTS (SELECT 1 FROM search_pending WHERE seq = old.seq);
	INSERT INTO messages_words (messages_words, rowid, content, payload, metadata)
	SELECT 'delete', old.seq, old.content, t.payload, t.metadata
	FROM (SELECT 1) LEFT JOIN message_search_text t ON t.seq = old.seq
	WHERE NOT EXISTS (SELECT 1 FROM search_pending WHERE seq = old.seq);
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
	INSERT OR IGNORE INTO search_pending (seq) VALUES (new.seq);
END;
