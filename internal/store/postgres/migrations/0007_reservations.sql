-- Schema version 7: file reservations (issue 15), shared by every daemon on the
-- database, so agents on different machines see each other's leases. A
-- reservation is live until expires_at; expired rows are deleted by the next
-- change to the workspace's reservations.
CREATE TABLE reservations (
	id         text        PRIMARY KEY,
	workspace  text        NOT NULL,
	agent      text        NOT NULL,
	pattern    text        NOT NULL,
	exclusive  boolean     NOT NULL,
	reason     text        NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL
);
CREATE INDEX reservations_by_workspace ON reservations (workspace, expires_at);
