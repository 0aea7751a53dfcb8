-- Schema version 15: messages whose time to live ends in the order they were
-- stored are found by a cursor, not by the expiry index.
--
-- Most messages take the daemon's default time to live, so their expiry
-- times rise with seq. Such a message is stored with expiry_reported = 2
-- (outside messages_expiry_due, whose entry was a page of every send's
-- commit), and DueExpiries walks them in seq order from expiry_cursor.seq,
-- stopping at the first whose time has not come. Every message up to the
-- cursor has been looked at. Messages stored before this version are in the
-- index, so the cursor starts past them.
--
-- expiry_reported: 0 not reported (in messages_expiry_due when it has a time
-- to live), 1 reported (or nothing to report), 2 not reported, found by the
-- cursor.
CREATE TABLE expiry_cursor (
	id  INTEGER PRIMARY KEY CHECK (id = 1),
	seq INTEGER NOT NULL
);
INSERT INTO expiry_cursor (id, seq) SELECT 1, coalesce(max(seq), 0) FROM messages;
