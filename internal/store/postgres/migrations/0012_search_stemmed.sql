-- Schema version 12: search stems English words ("deploying" finds
-- "deployed"), as SQLite's porter index does, and keeps prefix terms exact
-- ("deploy*" finds "deployment", not words that only stem alike). One
-- tsvector holds both: the stemmed words, then the words as written
-- ('simple'). Whole words are looked up stemmed, prefixes as written. The
-- concatenation shifts the second part's positions past the first's, so a
-- phrase never spans the two.
--
-- parley_english is the english configuration without its stop words: a
-- search for "the" or "not" must find them, as it does on SQLite, and not
-- turn into no condition at all.
CREATE TEXT SEARCH DICTIONARY parley_english_stem (TEMPLATE = snowball, Language = english);
CREATE TEXT SEARCH CONFIGURATION parley_english (COPY = english);
ALTER TEXT SEARCH CONFIGURATION parley_english
	ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part WITH parley_english_stem;

DROP INDEX messages_search;
ALTER TABLE messages DROP COLUMN search;
ALTER TABLE messages ADD COLUMN search tsvector GENERATED ALWAYS AS (
	to_tsvector('parley_english', content)
	|| coalesce(jsonb_to_tsvector('parley_english', payload::jsonb, '["string"]'), ''::tsvector)
	|| coalesce(jsonb_to_tsvector('parley_english', metadata, '["string"]'), ''::tsvector)
	|| to_tsvector('simple', content)
	|| coalesce(jsonb_to_tsvector('simple', payload::jsonb, '["string"]'), ''::tsvector)
	|| coalesce(jsonb_to_tsvector('simple', metadata, '["string"]'), ''::tsvector)
) STORED;
CREATE INDEX messages_search ON messages USING gin (search);
