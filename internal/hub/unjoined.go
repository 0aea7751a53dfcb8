package hub

import (
	"context"
	"slices"
	"strings"
	"time"
)

// A send to a name that never joined is stored: its inbox keeps the
// message until the agent comes (seed 001), but the sender is told at once
// that nobody has that name, with the names that look like it ("bbo has
// never joined; did you mean bob?"), and the message lives UnjoinedTTL
// unless the send names a time to live: a misspelt name bounces back in
// minutes, not a day later.

// DefaultUnjoinedTTL is the time to live of a message sent to a name that
// never joined, unless the send names one.
const DefaultUnjoinedTTL = 10 * time.Minute

// unjoined reports whether the plain name addr (as sent: not a role, a
// group, a queue, a person or an old name) names no agent of ws, from what
// resolving it just read (checkRecipient's record).
func (h *Hub) unjoined(ctx context.Context, ws, addr string, recips []string) bool {
	a, err := ParseAddress(addr)
	if err != nil || a.Kind != AddrName || len(recips) != 1 || recips[0] != a.Name || strings.HasPrefix(a.Name, HumanPrefix) {
		return false
	}
	r, _, ok := h.recipients.get(inboxKey{ws, a.Name}, h.now())
	if ok {
		return r.agent == nil
	}
	_, err = h.store.Agent(ctx, ws, a.Name)
	return IsNotFound(err)
}

// maxNear bounds the names a warning suggests.
const maxNear = 3

// NearNames returns up to three agents of ws whose names are close to name
// (an edit or two away, or one a prefix of the other, ignoring case),
// closest first: what a sender who misspelt it meant.
func (h *Hub) NearNames(ctx context.Context, ws, name string) ([]string, error) {
	as, err := h.store.Agents(ctx, ws)
	if err != nil {
		return nil, err
	}
	type near struct {
		name string
		d    int
	}
	var ns []near
	want := strings.ToLower(name)
	for _, a := range as {
		if a.Name == name {
			continue
		}
		got := strings.ToLower(a.Name)
		d := editDistance(want, got)
		limit := 2
		if len([]rune(want)) <= 3 {
			limit = 1
		}
		switch {
		case d <= limit:
		case len(want) >= 3 && (strings.HasPrefix(got, want) || strings.HasPrefix(want, got)):
			d = limit + 1
		default:
			continue
		}
		ns = append(ns, near{a.Name, d})
	}
	slices.SortStableFunc(ns, func(a, b near) int { return a.d - b.d })
	out := make([]string, 0, maxNear)
	for i := 0; i < len(ns) && i < maxNear; i++ {
		out = append(out, ns[i].name)
	}
	return out, nil
}

// editDistance is the optimal string alignment distance of a and b: the
// edits (insert, delete, substitute, swap two neighbours) that make one
// the other, by runes. "bbo" is one swap from "bob".
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
