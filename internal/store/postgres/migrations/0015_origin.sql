-- Schema version 15: what the daemon attests of each message's sending
-- (hub.Origin): the sender's role then, the daemon's host, the door it came
-- in by, and, for a task's result, the task. Messages from before say nothing.
ALTER TABLE messages ADD COLUMN sender_role text NOT NULL DEFAULT '',
	ADD COLUMN origin_host text NOT NULL DEFAULT '',
	ADD COLUMN origin_door text NOT NULL DEFAULT '',
	ADD COLUMN task_of text NOT NULL DEFAULT '';
