package profile

import "github.com/parley-dev/parley/internal/ops"

// coordTools are the coordination tools of the native profile: file
// reservations, search and work queues (issue 15).
func coordTools(h *Host) []Tool {
	// Every native tool declares its output schema (clients validate
	// structured results against it); tools/list's size is bounded by the
	// budget in coord_test.go.
	return []Tool{
		typed(h, "reserve_paths", "Reserve files before editing them. All or nothing: if another agent holds an overlapping reservation you get none, and the conflicts name holder, reason and expiry. Reserving again renews.", ops.ReservePaths),
		typed(h, "renew_reservations", "Extend your reservations (all, or the ids given).", ops.RenewReservations),
		typed(h, "release_reservations", "Release your reservations when done: by ids, by paths as reserved, or all when neither is given.", ops.ReleaseReservations),
		typed(h, "list_reservations", "List the live file reservations of this workspace (or one agent's).", ops.ListReservations),
		typed(h, "who_has", "Show who holds reservations covering a file.", ops.WhoHas),
		typed(h, "claim_task", "Take the next task sent to queue:NAME. It is yours alone until you complete or release it, your session ends, or its lease ends.", ops.ClaimTask),
		typed(h, "complete_task", "Finish a task you claimed; its sender gets the result as a reply.", ops.CompleteTask),
		typed(h, "release_task", "Give a task you claimed back to its queue.", ops.ReleaseTask),
		typed(h, "search_messages", "Search the messages you sent or received, best match first, with the matching passage.", ops.SearchMessages),
	}
}

// lean is the profile for small context budgets: six tools with short
// descriptions and no output schemas (results still carry structured
// content), covering send, reply, inbox, wait and status.
func Lean(h *Host) Profile {
	return Profile{Tools: []Tool{
		typed(h, "send_message", "Send a message to an agent, @role, @group or @everyone.", ops.Send, hide("payload", "metadata", "idempotency_key", "deliver", "ttl_seconds"), noOutputSchema()),
		typed(h, "reply", "Reply to a message; it goes to its sender, in its thread.", ops.Reply, noOutputSchema()),
		typed(h, "check_messages", "Return your unread messages and mark them read.", ops.Check, noOutputSchema()),
		typed(h, "wait_for_message", "Block until a message arrives (or timeout seconds pass) and return it.", ops.Wait, noOutputSchema()),
		typed(h, "list_agents", "List the agents here and whether they are active.", ops.ListAgents, noOutputSchema()),
		typed(h, "set_status", "Set your status: ready, work or offline.", ops.SetStatus, noOutputSchema()),
	}}
}
