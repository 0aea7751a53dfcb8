-- Schema version 20: how long an agent lives. session_bound: it is named
-- after its client session (claude-myrepo-3f9a1c, or the name such a session
-- chose) and lives as long as that session; provisional: its session's start
-- registered it, to be reachable at once, and it has made no call since, so
-- that it expires once its session ends (a health check's never lives).
ALTER TABLE agents ADD COLUMN session_bound boolean NOT NULL DEFAULT false;
ALTER TABLE agents ADD COLUMN provisional boolean NOT NULL DEFAULT false;
