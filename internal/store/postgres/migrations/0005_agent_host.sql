-- Schema version 5: the machine whose daemon last saw each agent, so that
-- `parley agents` on any daemon shows where an agent is.
ALTER TABLE agents ADD COLUMN host text NOT NULL DEFAULT '';
