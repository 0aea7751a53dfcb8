package mcpserver

// native is seed 000's eleven tools and Parley's extras, each an operation
// of ops under seed 000's names.
func (s *Server) native() Profile {
	o := s.ops
	return Profile{Tools: append([]Tool{
		typed(s, "send_message", "Send a message to an agent (by name, even one that has not joined yet), a role (@role), a group (@group) or everyone (@everyone). Returns once the message is stored.", o.Op("Send"), hide("payload")),
		typed(s, "check_messages", "Return your unread messages, highest priority first then oldest first; read once your client has them. redelivered: handed to you before.", o.Op("Check")),
		typed(s, "wait_for_message", "Block until a message for you arrives (or the timeout passes), then return it. Sends progress notifications while waiting when given a progress token.", o.Op("Wait")),
		typed(s, "list_agents", "List the agents of this workspace with their presence (active or offline) and health (working, waiting, idle, stalled, offline).", o.Op("ListAgents")),
		typed(s, "broadcast_message", "Send one message to every other agent of the workspace, optionally only active ones or excluding names or roles.", o.Op("Broadcast")),
		typed(s, "create_group", "Create a named group to address as @name.", o.Op("CreateGroup")),
		typed(s, "delete_group", "Delete a group. @everyone is built in and cannot be deleted.", o.Op("DeleteGroup")),
		typed(s, "add_group_member", "Add an agent or a whole role to a group.", o.Op("AddMember")),
		typed(s, "remove_group_member", "Remove an agent or a role from a group.", o.Op("RemoveMember")),
		typed(s, "list_groups", "List the groups of this workspace.", o.Op("ListGroups")),
		typed(s, "get_group", "Show a group and its members; expand=true also lists the agents it reaches now.", o.Op("GetGroup")),
		// Parley's extras.
		typed(s, "whoami", "Show the identity this session speaks for.", o.Op("Whoami")),
		typed(s, "set_status", "Say whether you are ready for work, at work, or offline.", o.Op("SetStatus")),
		typed(s, "get_thread", "Return every message of the thread a message belongs to, oldest first.", o.Op("Thread")),
		typed(s, "wait_for_reply", "Block until a reply to your message (in its thread, to you, from one of its recipients; for a task, its claimant's result) arrives or the timeout passes, and return it.", o.Op("WaitForReply")),
		typed(s, "message_status", "Show each recipient's copy of a message you sent or received: queued, delivered, redelivered, read or acked.", o.Op("MessageStatus")),
		typed(s, "ack_message", "Acknowledge messages sent to you.", o.Op("Ack")),
		typed(s, "list_overdue", "List your messages whose ack deadline passed unacknowledged.", o.Op("Overdue")),
		typed(s, "my_work", "Show your work in progress as Parley keeps it: tasks you claimed, files you reserved, messages still awaiting a reply or ack, unread count. Call it after a compaction or restart.", o.Op("MyWork")),
	}, s.coordTools()...)}
}
