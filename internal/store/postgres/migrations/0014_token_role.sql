-- Schema version 14: an agent token binds its agent's role too. Tokens made
-- before have none: their agent keeps the role it has.
ALTER TABLE agent_tokens ADD COLUMN role text NOT NULL DEFAULT '';
