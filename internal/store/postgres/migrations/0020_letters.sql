-- Schema version 20 (as SQLite's 0015): what the client did with the letter
-- that told of a copy.
--
-- letter: the id of the door's letter that told of the copy (or that could
-- not go); door_state: what the client said of it ('' nothing yet, 'held'
-- for a person, 'unconfirmed' idle with no word, 'notloaded' no letter went:
-- the thread is not loaded, 'declined' a person refused it: the copy left
-- the inbox, bounced_at set); door_note: why, in the client's words;
-- door_at: since when; door_until: held until, if the client said.
ALTER TABLE deliveries
	ADD COLUMN letter     text NOT NULL DEFAULT '',
	ADD COLUMN door_state text NOT NULL DEFAULT '',
	ADD COLUMN door_note  text NOT NULL DEFAULT '',
	ADD COLUMN door_at    timestamptz,
	ADD COLUMN door_until timestamptz;
CREATE INDEX deliveries_letter ON deliveries (workspace, recipient, letter) WHERE letter != '';
