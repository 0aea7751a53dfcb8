package hub

import "context"

// The size limit covers everything a message carries, and a response that
// hands out messages has a byte budget: an attack run sent 3.84 MB of
// metadata past a content-only limit, and made one check return 384 MB.

// DefaultResponseBudget is about how many bytes of messages one check or
// peek hands out: past it the rest stay in the inbox, counted as remaining.
const DefaultResponseBudget = 4 << 20

// size is what the size limit counts of a request: content, payload,
// metadata keys and values, the address and the reply-to id.
func (r *SendRequest) size() int {
	n := len(r.Content) + len(r.Payload) + len(r.To) + len(r.ReplyTo)
	for k, v := range r.Metadata {
		n += len(k) + len(v)
	}
	return n
}

// Size is the bytes of m that the size limit and the response budget count.
func (m *Message) Size() int {
	n := len(m.Content) + len(m.Payload) + len(m.To) + len(m.ReplyTo)
	for k, v := range m.Metadata {
		n += len(k) + len(v)
	}
	return n
}

// takeBudgeted takes up to q.Limit deliveries, but not many more bytes than
// the response budget. A take cannot be undone without marking a message
// redelivered, so it never takes more than surely fits: batches of as many
// of the largest possible messages as the budget has room for, at least
// one message in all. An inbox that holds fewer than a batch ends it; then
// the bool reports that the take drained what q selects from the inbox.
func (h *Hub) takeBudgeted(ctx context.Context, q TakeQuery) ([]*Delivery, bool, error) {
	most := h.maxContent
	if q.Limit*most <= h.budget {
		ds, err := h.take(ctx, q) // the common case: one take
		return ds, err == nil && len(ds) < q.Limit, err
	}
	var out []*Delivery
	used, left := 0, q.Limit
	for left > 0 {
		n := min(left, (h.budget-used)/most)
		if n <= 0 {
			if len(out) > 0 {
				break
			}
			n = 1
		}
		q.Limit = n
		ds, err := h.take(ctx, q)
		if err != nil {
			if len(out) > 0 {
				return out, false, nil // what was taken is handed out; the rest waits
			}
			return nil, false, err
		}
		out = append(out, ds...)
		for _, d := range ds {
			used += d.Message.Size()
		}
		left -= len(ds)
		if len(ds) < n {
			return out, true, nil
		}
	}
	return out, false, nil
}

// trimBudget keeps the leading deliveries of ds that fit in the response
// budget (at least one), for reads that take nothing (peek).
func (h *Hub) trimBudget(ds []*Delivery) []*Delivery {
	used := 0
	for i, d := range ds {
		if d.Message == nil {
			continue
		}
		used += d.Message.Size()
		if used > h.budget && i > 0 {
			return ds[:i]
		}
	}
	return ds
}
