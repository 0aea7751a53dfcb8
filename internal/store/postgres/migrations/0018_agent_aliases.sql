-- Schema version 19: an agent's old names. A session whose name was derived
-- (claude-myrepo-3f9a1c) may rename itself; the old name stays an alias, so
-- that mail to it, and the session's hooks that still speak as it, reach the
-- agent under its new name.
CREATE TABLE agent_aliases (
	workspace  text        NOT NULL,
	alias      text        NOT NULL,
	name       text        NOT NULL,
	created_at timestamptz NOT NULL,
	PRIMARY KEY (workspace, alias)
);
CREATE INDEX agent_aliases_by_name ON agent_aliases (workspace, name);
