-- Schema version 8: message search (issue 15). What search indexes of a
-- message: its content, the string values of its JSON payload and its metadata
-- values (not the keys), as words of the 'simple' configuration (lower-cased,
-- not stemmed: agents search for identifiers, not English).
ALTER TABLE messages ADD COLUMN search tsvector GENERATED ALWAYS AS (
	to_tsvector('simple', content)
	|| coalesce(jsonb_to_tsvector('simple', payload::jsonb, '["string"]'), ''::tsvector)
	|| coalesce(jsonb_to_tsvector('simple', metadata, '["string"]'), ''::tsvector)
) STORED;
CREATE INDEX messages_search ON messages USING gin (search);
