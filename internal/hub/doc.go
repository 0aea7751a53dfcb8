// Package hub is Parley's domain: workspaces, agents and their presence, messages
// and their per-recipient delivery, addressing, groups, and long-poll waits.
//
// It owns the rules (validation, addressing, inbox order, wake-ups) and talks to
// durable state only through the Store interface. It imports nothing of Parley's;
// the daemon, the MCP tools and the stores import it.
//
// # Readers
//
// Reading a message (check, wait, receive, a claim, a push) leases its copy
// to a reader: the copy is the reader's alone until the reader is known to
// have it (then it is read) or known not to (then it goes back to the inbox,
// in its place, marked redelivered, for the next read). A [Reader] is that
// reader's ledger, written once for every door: which calls handed out which
// messages, which answers were written, which the client confirmed, which
// tasks it claimed, which confirmations are not written yet. A door opens
// one per reader (an MCP session, a stream session, one JSON API request, a
// client door's delivery), passes it to the operations beside the caller's
// identity, and only tells it what happened. The hub's reads (Receive,
// Next, WaitForReply) take the reader and record themselves what each call
// hands out; the door says the rest:
//
//   - [Reader.Written]: the call's answer was written, or could not be;
//   - [Reader.Receipt], [Reader.NextRequest]: the client says what it has,
//     or asks again (which says it has what came before);
//   - [Reader.Cancel], [Reader.Lost], [Reader.Close]: the client gave up a
//     call, is probably gone, is gone.
//
// The reader decides the rest from the [ConfirmPolicy] it was opened with:
// confirmed on write, on the client's receipt, or on its next request. What
// a closed reader, or a cancelled call, is handed goes back at once, so a
// reader never holds a message its client did not get; the lease (the
// hub's, or [ReaderOptions.Lease]) backs every door for what it cannot
// learn.
//
// # Adding a door
//
// A new way to hand messages to a client (a client's own message socket, a
// thread queue) is one reader policy and no bookkeeping of its own:
//
//	r := h.OpenReader(hub.ReaderOptions{Workspace: ws, Agent: agent, Confirm: hub.ConfirmOnWrite})
//	ds, _, err := h.Receive(ctx, hub.ReceiveRequest{Workspace: ws, Agent: agent, Reader: r, Call: call})
//	err = write(ds)                     // the door's own transport
//	r.Written(ctx, call, err)           // read if written, back in the inbox if not
//
// A door whose client confirms by itself opens the reader with
// ConfirmOnReceipt and calls Receipt as confirmations arrive, and Close when
// its connection ends. Keys ([Reader.Key]) are unguessable and bound to the
// agent and workspace ([CheckReader]): a client settles a reader of an
// earlier request only through [Hub.ResumeReader], which refuses another
// agent's.
//
// # Session doors: attention, not reads
//
// A client session's own door ([SessionDoor]: Claude Code's inbox socket, a
// Codex thread) carries a short letter that tells the agent it has mail;
// the agent then reads through its MCP session's reader as above. A letter
// hands nothing out, so it holds no lease and is no reader: it is a wake
// path, like a hook or a tmux notice ([Hub.Handed] records it with the
// door's [DoorKind.WakePath] and the letter's id). What it adds is the
// attention receipt, from what the client says of the letter and nothing
// else ([Hub.MarkLetter], letter.go): held for a person, released,
// declined (out of the inbox, the sender told), bounced, unconfirmed (the
// session went idle without a word of it), or seen ([Hub.LetterSeen]) when
// the session's turn carried it; and a copy nothing reached within its
// message's time to live, while its recipient had no reader and no door,
// bounces ([Hub.Sweep]). [Hub.Redeliver] sends a bounced or declined copy
// again. Doors open and close here; internal/attention decides when to
// write one.
package hub
