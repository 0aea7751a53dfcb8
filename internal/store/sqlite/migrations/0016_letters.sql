-- Schema version 16: what the client did with the letter that told of a copy.
--
-- letter: the id of the door's letter that told of the copy (or that could
-- not go); door_state: what the client said of it ('' nothing yet, 'held'
-- for a person, 'unconfirmed' idle with no word, 'notloaded' no letter went:
-- the thread is not loaded, 'declined' a person refused it: the copy left
-- the inbox, bounced_at set); door_note: why, in the client's words;
-- door_at: since when; door_until: held until, if the client said.
ALTER TABLE deliveries ADD COLUMN letter TEXT NOT NULL DEFAULT '';
ALTER TABLE deliveries ADD COLUMN door_state TEXT NOT NULL DEFAULT '';
ALTER TABLE deliveries ADD COLUMN door_note TEXT NOT NULL DEFAULT '';
ALTER TABLE deliveries ADD COLUMN door_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN door_until INTEGER NOT NULL DEFAULT 0;
-- The copies of a letter, for the client's word of it.
CREATE INDEX deliveries_letter ON deliveries (workspace, recipient, letter) WHERE letter != '';
