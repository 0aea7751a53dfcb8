-- Schema version 11: what the daemon attests of each message's sending
-- (hub.Origin): the sender's role then, the daemon's host, the door it came
-- in by, and, for a task's result, the task. Messages from before say nothing.
ALTER TABLE messages ADD COLUMN sender_role TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN origin_host TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN origin_door TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN task_of TEXT NOT NULL DEFAULT '';
