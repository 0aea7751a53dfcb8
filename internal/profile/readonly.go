package profile

import "slices"

// ReadTools are the native and lean tools that only read: the agent's own
// inbox (reading it marks its own copies read, and nothing else), the
// workspace's agents, groups, threads, reservations and the agent's own
// sends. A client package that cannot carry permission rules (the Claude
// Code plugin) lets them run without a prompt through its hook, so that a
// session woken by a letter reads its mail without stopping at a dialog;
// the tools that change what others see (send, ack, reserve, groups,
// tasks, status) keep the client's prompt unless the user allows them.
var ReadTools = []string{
	"check_messages", "wait_for_message", "wait_for_reply",
	"whoami", "my_work", "list_agents", "list_groups", "get_group", "get_thread",
	"message_status", "list_overdue", "search_messages", "list_reservations", "who_has",
}

// IsReadTool reports whether the tool (its name within the server) only
// reads (ReadTools).
func IsReadTool(name string) bool { return slices.Contains(ReadTools, name) }
