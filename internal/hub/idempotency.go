package hub

import (
	"context"
	"time"
	"unicode"
)

// Idempotency keys. A client that does not hear whether a send (or a task's
// completion) went through, because its connection or the daemon died, may
// retry it with the same idempotency key: the store holds at most one
// message per sender and key, so the retry finds the first and sends nothing
// new. A key names its send for IdempotencyWindow; a retry after that is
// refused, as is one whose send differs from the first (the key would name
// two sends).

// IdempotencyWindow is how long a key names its send.
const IdempotencyWindow = 24 * time.Hour

// MaxIdempotencyKey bounds a key's length in bytes.
const MaxIdempotencyKey = 128

// ValidIdempotencyKey checks a key: printable, at most MaxIdempotencyKey bytes.
func ValidIdempotencyKey(key string) error {
	if len(key) > MaxIdempotencyKey {
		return Errorf("", Invalid, "idempotency_key is %d bytes; at most %d", len(key), MaxIdempotencyKey)
	}
	for _, r := range key {
		if !unicode.IsPrint(r) || r == unicode.ReplacementChar {
			return Errorf("", Invalid, "idempotency_key must be printable text")
		}
	}
	return nil
}

// keyed returns the message sender stored with key in ws, if any within the
// window: nil, nil when there is none (a first send); an error when the key
// is too old to name it.
func (h *Hub) keyed(ctx context.Context, ws, sender, key string) (*Message, error) {
	m, err := h.store.MessageByKey(ctx, ws, sender, key)
	if IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if h.now().Sub(m.CreatedAt) > IdempotencyWindow {
		return nil, Errorf("", Conflict, "idempotency_key %q named message %s, sent %s, more than %s ago: a new send needs a new key",
			key, m.ID, m.CreatedAt.UTC().Format(time.RFC3339), IdempotencyWindow)
	}
	return m, nil
}

// replaySend is the result of the first send with r's key, or nil if there
// is none.
func (h *Hub) replaySend(ctx context.Context, r SendRequest) (*SendResult, error) {
	m, err := h.keyed(ctx, r.Workspace, r.From, r.IdempotencyKey)
	if err != nil || m == nil {
		return nil, err
	}
	if m.To != r.To || m.Content != r.Content || m.ReplyTo != r.ReplyTo {
		return nil, Errorf("", Conflict, "idempotency_key %q names message %s, another send (to %s): a retry repeats its send, a new send takes a new key",
			r.IdempotencyKey, m.ID, m.To)
	}
	ds, err := h.store.Deliveries(ctx, r.Workspace, m.ID)
	if err != nil {
		return nil, err
	}
	recips := make([]string, len(ds))
	for i, d := range ds {
		recips[i] = d.Recipient
	}
	return &SendResult{Message: m, Recipients: recips, Presence: h.presence(ctx, r.Workspace, recips, nil), Replayed: true}, nil
}
