package profile

import "github.com/parley-dev/parley/internal/ops"

// native is seed 000's eleven tools and Parley's extras, each an operation
// of ops under seed 000's names.
func Native(h *Host) Profile {
	return Profile{Tools: append([]Tool{
		typed(h, "send_message", "Send a message to an agent (by name, even one that has not joined yet), a role (@role), a group (@group) or everyone (@everyone). Returns once the message is stored.", ops.Send, hide("payload")),
		typed(h, "check_messages", "Return your unread messages, highest priority first then oldest first; read once your client has them. redelivered: handed to you before.", ops.Check),
		typed(h, "wait_for_message", "Block until a message for you arrives (or the timeout passes), then return it. Sends progress notifications while waiting when given a progress token.", ops.Wait),
		typed(h, "list_agents", "List the agents of this workspace with their presence (active or offline) and health (working, waiting, idle, stalled, offline).", ops.ListAgents),
		typed(h, "broadcast_message", "Send one message to every other agent of the workspace, optionally only active ones or excluding names or roles.", ops.Broadcast),
		typed(h, "create_group", "Create a named group to address as @name.", ops.CreateGroup),
		typed(h, "delete_group", "Delete a group. @everyone is built in and cannot be deleted.", ops.DeleteGroup),
		typed(h, "add_group_member", "Add an agent or a whole role to a group.", ops.AddMember),
		typed(h, "remove_group_member", "Remove an agent or a role from a group.", ops.RemoveMember),
		typed(h, "list_groups", "List the groups of this workspace.", ops.ListGroups),
		typed(h, "get_group", "Show a group and its members; expand=true also lists the agents it reaches now.", ops.GetGroup),
		// Parley's extras.
		typed(h, "whoami", "Show the identity this session speaks for.", ops.Whoami),
		typed(h, "set_status", "Say whether you are ready for work, at work, or offline.", ops.SetStatus),
		typed(h, "get_thread", "Return every message of the thread a message belongs to, oldest first.", ops.Thread),
		typed(h, "wait_for_reply", "Block until a reply to your message (in its thread, to you, from one of its recipients; for a task, its claimant's result) arrives or the timeout passes, and return it.", ops.WaitForReply),
		typed(h, "message_status", "Show each recipient's copy of a message you sent or received: queued, delivered, redelivered, read or acked.", ops.MessageStatus),
		typed(h, "ack_message", "Acknowledge messages sent to you.", ops.Ack),
		typed(h, "list_overdue", "List your messages whose ack deadline passed unacknowledged.", ops.Overdue),
		typed(h, "my_work", "Show your work in progress as Parley keeps it: tasks you claimed, files you reserved, messages still awaiting a reply or ack, unread count. Call it after a compaction or restart.", ops.MyWork),
	}, coordTools(h)...)}
}
