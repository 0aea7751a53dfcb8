package hub

import (
	"context"
	"time"
)

// NoteWake records via as the wake path of the agent's copies of the
// messages that still wait in its inbox and were reached by no other path
// yet: for paths that tell an agent of its mail without handing it over (a
// hook, a tmux notice). It says how many copies it marked.
func (h *Hub) NoteWake(ctx context.Context, ws, agent string, messageIDs []string, via WakePath) (int, error) {
	const op = "note wake"
	if err := ValidWakePath(via); err != nil {
		return 0, withOp(op, err)
	}
	if len(messageIDs) == 0 {
		return 0, nil
	}
	if len(messageIDs) > MaxCheckLimit {
		return 0, Errorf(op, Invalid, "%d message ids; at most %d at once", len(messageIDs), MaxCheckLimit)
	}
	n, err := h.store.NoteWake(ctx, ws, agent, messageIDs, via, h.now().UTC())
	if err != nil {
		return 0, withOp(op, err)
	}
	if n > 0 && via.IsDoor() {
		k := inboxKey{ws, agent}
		h.mu.Lock()
		h.unseen[k] = struct{}{}
		early, ok := h.early[k]
		delete(h.early, k)
		h.mu.Unlock()
		for _, id := range messageIDs {
			h.publish(Event{Kind: EventMessageHanded, Workspace: ws, Agent: agent, MessageID: id, Via: via})
		}
		if ok && h.now().Sub(early) < earlyWindow {
			// The session took the letter before it was marked.
			if _, err := h.MarkSeen(ctx, ws, agent, via, time.Time{}); err != nil {
				h.log.Warn("mark seen", "agent", agent, "err", err)
			}
		}
	}
	return n, nil
}
