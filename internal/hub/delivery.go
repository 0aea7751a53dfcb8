package hub

import (
	"fmt"
	"strings"
	"time"
)

// DeliveryState is where one recipient's copy of a message stands.
//
// A copy starts Queued in the recipient's inbox. Reading it (check, wait,
// receive) hands it to a reader (an MCP session, or another reader key) as
// Delivered, leased to that reader until the lease ends. The reader confirms it
// (Read) once it is known to have it; if the reader goes away, cancels, or
// lets the lease run out first, the copy goes back to its place in the inbox as
// Redelivered, and the next reader gets it again with a higher delivery count.
// Acked is the recipient's explicit acknowledgement, which implies Read.
//
// A copy that nothing reached within its message's time to live, while its
// recipient had no reader and no door, leaves the inbox Bounced, with a
// reason, and its sender is told; so does a copy whose letter the client
// dropped, let expire or refused, and one a person declined in the session
// (Declined). Apart from the states, a copy records the path that first
// reached the agent with it (WokeVia: a letter through a door, a hook...),
// the letter that told of it, what the client said it did with that letter
// (Door: held for a person, or nothing at all) and when the agent's session
// was seen to start a turn with it (SeenAt).
type DeliveryState string

// The delivery states.
const (
	Queued      DeliveryState = "queued"      // in the inbox, never handed out
	Delivered   DeliveryState = "delivered"   // handed to a reader, not yet confirmed
	Redelivered DeliveryState = "redelivered" // back in the inbox after an unconfirmed delivery
	Read        DeliveryState = "read"        // the reader is known to have it
	Acked       DeliveryState = "acked"       // the recipient acknowledged it
	Bounced     DeliveryState = "bounced"     // out of the inbox unread: nothing could reach the recipient
	Declined    DeliveryState = "declined"    // out of the inbox unread: a person in the session refused its letter
)

// DoorState is what the client said it did with the letter that told of a
// copy, or that it said nothing: never a guess.
type DoorState string

// The door states. "" is a letter handed (or none written) that the client
// has said nothing of yet.
const (
	// DoorHeld: the client holds the letter for a person to approve
	// (Claude Code in bypass mode holds letters that assert no permission
	// mode); DoorNote says why, DoorUntil until when if the client said.
	DoorHeld DoorState = "held"
	// DoorUnconfirmed: the letter was handed, and the session went idle
	// without its turn showing the letter; the client said nothing.
	DoorUnconfirmed DoorState = "unconfirmed"
	// DoorNotLoaded: no letter went, because the session's thread is not
	// loaded (a Codex thread no client runs): the copy waits, DoorNote says
	// so, and the other wake paths stay open.
	DoorNotLoaded DoorState = "notloaded"
	// DoorDeclined: a person refused the letter in the session; the copy
	// left the inbox, Declined.
	DoorDeclined DoorState = "declined"
)

// WakePath is how a message first reached its recipient: the mechanism
// that handed it over or told the agent of it.
type WakePath string

// The wake paths.
const (
	WakeWait    WakePath = "wait"    // a blocked wait (wait_for_message, receive) returned it
	WakeCheck   WakePath = "check"   // the agent read its inbox (check_messages, parley inbox)
	WakeChannel WakePath = "channel" // pushed into a Claude Code session (mcp serve --channel)
	WakeHook    WakePath = "hook"    // a client hook told the session of it
	WakeTmux    WakePath = "tmux"    // a notice typed into the agent's tmux pane
	WakeManaged WakePath = "managed" // a managed agent's turn carried it
	// A letter through the session's door told the agent of it (a Claude
	// Code inbox letter, a Codex queued turn): DoorKind.WakePath.
	WakeDoorClaude   WakePath = "door:claude"
	WakeDoorCodex    WakePath = "door:codex"
	WakeDoorQwen     WakePath = "door:qwen"
	WakeDoorOpencode WakePath = "door:opencode"
)

// ValidWakePath checks a wake path's name.
func ValidWakePath(p WakePath) error {
	switch p {
	case WakeWait, WakeCheck, WakeChannel, WakeHook, WakeTmux, WakeManaged, WakeDoorClaude, WakeDoorCodex, WakeDoorQwen, WakeDoorOpencode:
		return nil
	}
	return Errorf("", Invalid, "invalid wake path %q: want wait, check, channel, hook, tmux, managed, door:claude, door:codex, door:qwen or door:opencode", p)
}

// IsDoor reports whether the path is a letter through a door.
func (p WakePath) IsDoor() bool { return strings.HasPrefix(string(p), "door:") }

// Delivery is one recipient's copy of a message and its state.
type Delivery struct {
	Workspace string
	Recipient string
	MessageID string
	// Message is the message itself where the call hands out content (Take,
	// Peek); nil elsewhere.
	Message *Message

	State DeliveryState
	// Count is how many times the copy was handed to a reader; a copy with
	// Count > 1 was handed out before, and its reader may have seen it.
	Count       int
	Reader      string    // while Delivered: the reader that holds the lease
	DeliveredAt time.Time // the latest hand-out; zero if never
	LeaseUntil  time.Time // while Delivered: when the copy goes back unconfirmed
	ReadAt      time.Time // zero until Read
	AckedAt     time.Time // zero until Acked
	// WokeVia is the path that first reached the agent with the copy, and
	// WokeAt when; empty until one did.
	WokeVia WakePath
	WokeAt  time.Time
	// SeenAt is when the agent's session was seen to start a turn with the
	// copy (the letter that told it of the copy opened the turn, or the
	// session called a Parley tool after it); zero until then.
	SeenAt time.Time
	// BouncedAt and BounceReason say when and why a Bounced (or Declined)
	// copy left the inbox.
	BouncedAt    time.Time
	BounceReason string
	// Letter is the id of the door's letter that told of the copy (or that
	// could not be written: DoorNotLoaded); "" if none.
	Letter string
	// Door is what the client said of that letter, since DoorAt; DoorNote
	// says why (the client's words), DoorUntil until when it holds it, if
	// the client said.
	Door      DoorState
	DoorNote  string
	DoorAt    time.Time
	DoorUntil time.Time
}

// LetterMark is a change that a client's word (or its silence) makes to the
// copies one letter told of.
type LetterMark string

// The letter marks.
const (
	MarkSeen        LetterMark = "seen"        // the session's turn carried the letter
	MarkHeld        LetterMark = "held"        // the client holds it for a person
	MarkReleased    LetterMark = "released"    // the person let a held letter through: handed again
	MarkUnconfirmed LetterMark = "unconfirmed" // handed, the session went idle, no word of it
	MarkNotLoaded   LetterMark = "notloaded"   // not written: the thread is not loaded
	// MarkOrphaned: the client held the letter, and its later word can no
	// longer come (the daemon that wrote it restarted: the receipts went to
	// the old one's address): the held copies are unconfirmed.
	MarkOrphaned LetterMark = "orphaned"
	MarkDeclined LetterMark = "declined" // a person refused it: out of the inbox, Declined
	MarkBounced  LetterMark = "bounced"  // the client dropped it or it expired: out of the inbox, Bounced
)

// LetterChange is one letter mark with what the client said.
type LetterChange struct {
	Mark  LetterMark
	Note  string    // why: held's cause, a drop's reason, a bounce's reason
	Until time.Time // held until, if the client said
}

// Repeat reports whether the copy was handed to a reader before this time.
func (d *Delivery) Repeat() bool { return d.Count > 1 }

// TakeQuery selects deliveries from a recipient's inbox for a reader.
type TakeQuery struct {
	Workspace string
	Recipient string
	// Reader holds the lease. Empty means no lease: the copies are Read at
	// once (for readers that have them the moment the call returns).
	Reader  string
	MaxRank int    // admit only ranks <= MaxRank
	Thread  string // only messages of this thread; empty: any
	After   string // only messages stored after the message with this id; empty: any
	// Repliers, if not nil, admits only messages sent by one of them, or
	// (ResultOf, if set) the result of that task (Origin.Task, which only
	// complete_task sets): the replies a wait for a reply counts. Other
	// messages stay in the inbox.
	Repliers   []string
	ResultOf   string
	Limit      int
	Now        time.Time // the hand-out time
	LeaseUntil time.Time // when an unconfirmed lease ends
	// Via is recorded as the wake path (at Now) of the copies that have none.
	Via WakePath
	// Confirm lists messages leased to Reader that the reader is known to
	// have: they are confirmed (at Now) before the take, in the same
	// transaction where the store has one.
	Confirm []string

	lease time.Duration // how long the hub leases, when not its default
}

// Handoff is a recipient's copy of a new message that its send hands
// straight to a reader blocked waiting for it, instead of queueing it: the
// store writes the copy as Take would have handed it out at Now (Delivered,
// count 1, leased to Reader until LeaseUntil; or Read at Now without a
// reader; its wake path Via), in the send's own transaction, so the reader's
// wake-up costs no write of its own.
type Handoff struct {
	Recipient  string
	Reader     string
	Now        time.Time
	LeaseUntil time.Time
	Via        WakePath
}

// Delivery is the copy a handoff of m makes, as Take would return it.
func (o Handoff) Delivery(m *Message) *Delivery {
	d := &Delivery{Workspace: m.Workspace, Recipient: o.Recipient, MessageID: m.ID, Message: m,
		Count: 1, DeliveredAt: o.Now}
	if o.Via != "" {
		d.WokeVia, d.WokeAt = o.Via, o.Now
	}
	if o.Reader == "" {
		d.State, d.ReadAt = Read, o.Now
	} else {
		d.State, d.Reader, d.LeaseUntil = Delivered, o.Reader, o.LeaseUntil
	}
	return d
}

// CheckHandoffs checks that each handed recipient is one of recipients, and
// handed once: a store's send checks it before it writes.
func CheckHandoffs(recipients []string, handed []Handoff) error {
	switch {
	case len(handed) == 0:
		return nil
	case len(recipients) == 1 && len(handed) == 1 && handed[0].Recipient == recipients[0]:
		return nil // a send to one agent that waits: no set to build
	}
	in := make(map[string]bool, len(recipients)) // recipient -> handed already
	for _, r := range recipients {
		in[r] = false
	}
	for _, o := range handed {
		done, ok := in[o.Recipient]
		switch {
		case !ok:
			return fmt.Errorf("handed recipient %q is not a recipient", o.Recipient)
		case done:
			return fmt.Errorf("recipient %q is handed twice", o.Recipient)
		}
		in[o.Recipient] = true
	}
	return nil
}

// ReleaseQuery selects leased deliveries to put back in their inboxes.
type ReleaseQuery struct {
	// Reader releases that reader's leases; empty releases every reader's
	// leases (with Expired, those that ran out; without, all of them: only
	// for a store that no other daemon uses, at start).
	Reader string
	// MessageIDs narrows a reader's release to these messages; nil: all.
	MessageIDs []string
	// Expired, if not zero, releases only leases that end at or before it.
	Expired time.Time
	// Mine releases only the leases this daemon handed out (its store's
	// node), for a daemon that starts again while others share its store.
	// A store that is one daemon's alone (SQLite) counts every lease as its
	// own.
	Mine bool
}

// Overdue is a message whose acknowledgement deadline passed while some of its
// recipients had not acknowledged it.
type Overdue struct {
	Message *Message
	Pending []string // recipients that have not acked, sorted
}

// Apply changes d in memory as a store's MarkLetter changes the copy, at
// at: stores return the copies they changed this way.
func (ch LetterChange) Apply(d *Delivery, letter string, at time.Time) {
	at = at.UTC()
	d.Letter = letter
	switch ch.Mark {
	case MarkSeen:
		d.SeenAt, d.Door, d.DoorNote, d.DoorUntil = at, "", "", time.Time{}
	case MarkHeld, MarkUnconfirmed, MarkNotLoaded:
		d.Door, d.DoorNote, d.DoorAt, d.DoorUntil = DoorState(ch.Mark), ch.Note, at, ch.Until.UTC()
		if ch.Until.IsZero() {
			d.DoorUntil = time.Time{}
		}
	case MarkReleased:
		d.Door, d.DoorNote, d.DoorAt, d.DoorUntil = "", "", at, time.Time{}
	case MarkOrphaned:
		d.Door, d.DoorNote, d.DoorAt, d.DoorUntil = DoorUnconfirmed, ch.Note, at, time.Time{}
	case MarkDeclined, MarkBounced:
		d.State, d.ReadAt, d.BouncedAt, d.BounceReason = Bounced, at, at, ch.Note
		d.Door, d.DoorNote, d.DoorAt, d.DoorUntil = "", "", at, time.Time{}
		if ch.Mark == MarkDeclined {
			d.State, d.Door, d.DoorNote = Declined, DoorDeclined, ch.Note
		}
	}
}
