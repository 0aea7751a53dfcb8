-- Schema version 2: which daemon owns what, for daemons that share the database.
-- node is a daemon's name (host:state directory); a managed agent runs on the
-- daemon that launched it, and only that daemon recovers its runs at start.
ALTER TABLE managed_agents ADD COLUMN node text NOT NULL DEFAULT '';
CREATE INDEX managed_agents_by_node ON managed_agents (node, created_at);
