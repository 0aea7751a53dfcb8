package hub

import "context"

// NoteWake records via as the wake path of the agent's copies of the
// messages that still wait in its inbox and were reached by no other path
// yet: for paths that tell an agent of its mail without handing it over (a
// hook, a tmux notice). A door's letter is recorded with its id (Handed).
// It says how many copies it marked.
func (h *Hub) NoteWake(ctx context.Context, ws, agent string, messageIDs []string, via WakePath) (int, error) {
	const op = "note wake"
	if via.IsDoor() {
		return 0, Errorf(op, Invalid, "wake path %q is a door's: its letter records it", via)
	}
	return h.noteWake(ctx, op, ws, agent, messageIDs, via, "")
}

func (h *Hub) noteWake(ctx context.Context, op, ws, agent string, messageIDs []string, via WakePath, letter string) (int, error) {
	if err := ValidWakePath(via); err != nil {
		return 0, withOp(op, err)
	}
	if len(messageIDs) == 0 {
		return 0, nil
	}
	if len(messageIDs) > MaxCheckLimit {
		return 0, Errorf(op, Invalid, "%d message ids; at most %d at once", len(messageIDs), MaxCheckLimit)
	}
	n, err := h.store.NoteWake(ctx, ws, agent, messageIDs, via, letter, h.now().UTC())
	if err != nil {
		return 0, withOp(op, err)
	}
	return n, nil
}
