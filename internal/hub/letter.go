package hub

import (
	"context"
	"fmt"
	"time"
)

// What a letter through a door became, as the client said. The doorman
// writes a letter and records it (Handed: the copies it told of, with the
// letter's id); then it records what the client says of that letter, and
// only that: held for a person, released, declined, dropped; the session's
// turn carrying it (seen, reported by the session's hook, or the client's
// queue giving it to a turn); or, where the client says nothing while the
// session goes idle, unconfirmed. Nothing is inferred from a socket or from
// other traffic of the session.

// Handed records that a letter through a door (via, a door's wake path)
// told the agent of its copies of the messages: those still in its inbox
// that no path reached yet take via as their wake path and letter as their
// letter. It says how many it marked.
func (h *Hub) Handed(ctx context.Context, ws, agent string, messageIDs []string, via WakePath, letter string) (int, error) {
	const op = "handed"
	if !via.IsDoor() {
		return 0, Errorf(op, Invalid, "wake path %q is not a door's", via)
	}
	if err := validLetter(op, letter); err != nil {
		return 0, err
	}
	n, err := h.noteWake(ctx, op, ws, agent, messageIDs, via, letter)
	if err != nil || n == 0 {
		return n, err
	}
	for _, id := range messageIDs {
		h.publish(Event{Kind: EventMessageHanded, Workspace: ws, Agent: agent, MessageID: id, Via: via, Letter: letter})
	}
	h.mu.Lock()
	early, ok := h.early[letter]
	delete(h.early, letter)
	h.mu.Unlock()
	if ok && h.now().Sub(early) < earlyWindow {
		// The session took the letter before it was recorded.
		if _, err := h.MarkLetter(ctx, ws, agent, letter, LetterChange{Mark: MarkSeen}); err != nil {
			h.log.Warn("mark seen", "agent", agent, "err", err)
		}
	}
	return n, nil
}

// earlyWindow bounds how long a letter seen before its copies were
// recorded still speaks for them.
const earlyWindow = 10 * time.Second

func validLetter(op, letter string) error {
	if letter == "" || len(letter) > 64 {
		return Errorf(op, Invalid, "invalid letter id %q", letter)
	}
	return nil
}

// LetterSeen records that the agent's session started a turn carrying the
// letter (its hook found the letter in the prompt or the transcript): the
// copies it told of are seen. A letter seen before the doorman recorded
// it counts for its copies once they are (earlyWindow).
func (h *Hub) LetterSeen(ctx context.Context, ws, agent, letter string) (int, error) {
	ds, err := h.MarkLetter(ctx, ws, agent, letter, LetterChange{Mark: MarkSeen})
	if err == nil && len(ds) == 0 {
		h.mu.Lock()
		for l, at := range h.early { // few: letters seen before their record
			if h.now().Sub(at) >= earlyWindow {
				delete(h.early, l)
			}
		}
		h.early[letter] = h.now()
		h.mu.Unlock()
	}
	return len(ds), err
}

// MarkLetter applies what the client said of a letter to the copies the
// letter told of (Store.MarkLetter), announces each change, and tells the
// senders of the copies declined or bounced. It returns the changed copies.
func (h *Hub) MarkLetter(ctx context.Context, ws, agent, letter string, ch LetterChange) ([]*Delivery, error) {
	return h.markLetter(ctx, "mark letter", ws, agent, letter, nil, ch)
}

// NotLoaded records that no letter could go to the agent's door for its
// copies of the messages, because the session's thread is not loaded (and
// was not resumed): they wait in the inbox with note as the reason, for the
// other wake paths or the thread's return.
func (h *Hub) NotLoaded(ctx context.Context, ws, agent string, messageIDs []string, letter, note string) ([]*Delivery, error) {
	if len(messageIDs) == 0 {
		return nil, nil
	}
	return h.markLetter(ctx, "not loaded", ws, agent, letter, messageIDs, LetterChange{Mark: MarkNotLoaded, Note: note})
}

// HoldExpired bounces, with note as the reason, the agent's copies of the
// messages that letter told of and its client still holds for a person,
// once their time to live ended (the client's own hold may outlast it):
// their senders are told. It returns the bounced copies.
func (h *Hub) HoldExpired(ctx context.Context, ws, agent, letter string, messageIDs []string, note string) ([]*Delivery, error) {
	var held []string
	for _, id := range messageIDs {
		ds, err := h.store.Deliveries(ctx, ws, id)
		if err != nil {
			return nil, withOp("hold expired", err)
		}
		for _, d := range ds {
			if d.Recipient == agent && d.Letter == letter && d.Door == DoorHeld {
				held = append(held, id)
			}
		}
	}
	if len(held) == 0 {
		return nil, nil
	}
	return h.markLetter(ctx, "hold expired", ws, agent, letter, held, LetterChange{Mark: MarkBounced, Note: note})
}

func (h *Hub) markLetter(ctx context.Context, op, ws, agent, letter string, ids []string, ch LetterChange) ([]*Delivery, error) {
	if err := validLetter(op, letter); err != nil {
		return nil, err
	}
	kind, ok := letterEvents[ch.Mark]
	if !ok {
		return nil, Errorf(op, Invalid, "invalid letter mark %q", ch.Mark)
	}
	if len(ids) > MaxCheckLimit {
		return nil, Errorf(op, Invalid, "%d message ids; at most %d at once", len(ids), MaxCheckLimit)
	}
	if len(ch.Note) > maxNote {
		ch.Note = ch.Note[:maxNote]
	}
	ds, err := h.store.MarkLetter(ctx, ws, agent, letter, ids, ch, h.now().UTC())
	if err != nil {
		return nil, withOp(op, err)
	}
	for _, d := range ds {
		e := deliveryEvent(kind, d, time.Time{})
		e.Via, e.Reason, e.Until = d.WokeVia, ch.Note, ch.Until
		h.publish(e)
	}
	if ch.Mark == MarkDeclined || ch.Mark == MarkBounced {
		h.returnToSenders(ctx, ws, ds, ch.Mark == MarkDeclined)
	}
	return ds, nil
}

// maxNote bounds what a client's word adds to a copy.
const maxNote = 500

// letterEvents is the event each mark announces.
var letterEvents = map[LetterMark]EventKind{
	MarkSeen: EventMessageSeen, MarkHeld: EventMessageHeld, MarkReleased: EventMessageHanded,
	MarkUnconfirmed: EventMessageUnconfirmed, MarkNotLoaded: EventMessageNotLoaded, MarkOrphaned: EventMessageUnconfirmed,
	MarkDeclined: EventMessageDeclined, MarkBounced: EventMessageBounced,
}

// returnToSenders tells each sender of the copies ds, which left the
// inbox at the door, that they came back and how to send them again.
func (h *Hub) returnToSenders(ctx context.Context, ws string, ds []*Delivery, declined bool) {
	byMsg := map[string][]*Delivery{}
	var order []string
	for _, d := range ds {
		if _, ok := byMsg[d.MessageID]; !ok {
			order = append(order, d.MessageID)
		}
		byMsg[d.MessageID] = append(byMsg[d.MessageID], d)
	}
	kind := "bounced"
	if declined {
		kind = "declined"
	}
	for _, id := range order {
		m, err := h.store.Message(ctx, ws, id)
		if err != nil {
			h.log.Warn("find a returned message", "message", id, "err", err)
			continue
		}
		h.noticeReturn(ctx, m, byMsg[id], kind, fmt.Sprintf("Nothing reads it now; `parley redeliver %s` sends it again.", id))
	}
}

// Redeliver puts recipient's bounced or declined copy of the message back
// in its inbox, as if new: the doors, hooks and waits reach it again. The
// caller decides who may (the message's sender, a person).
func (h *Hub) Redeliver(ctx context.Context, ws, recipient, messageID string) (*Delivery, error) {
	const op = "redeliver"
	d, err := h.store.Redeliver(ctx, ws, recipient, messageID)
	if err != nil {
		return nil, withOp(op, err)
	}
	h.publish(deliveryEvent(EventMessageRedelivered, d, time.Time{}))
	h.wakeDeliveries([]*Delivery{d})
	return d, nil
}
