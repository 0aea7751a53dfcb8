package hub

import (
	"context"
	"sync"
	"time"
)

// Claims bound to their holders' liveness. A claim is leased for the hub's
// claim lease (DefaultClaimLease: minutes), and whatever shows that its
// holder lives renews it before it runs out:
//   - a live MCP session that claimed it (its reader, until it closes or is
//     lost);
//   - for a claim held for its agent (the CLI, the JSON API: AgentClaimKey),
//     a live session of the agent on this daemon, a managed run of it here
//     (KeepClaims), or the agent's own heartbeat, parley queue renew
//     (RenewTask).
// A holder that is gone renews nothing, and its task goes back to its queue
// within the lease, marked redelivered; a holder whose daemon died goes back
// sooner, when the others reclaim the daemon (liveness.go), and a renewal
// through another daemon moves the claim to that one.

// claimKeeper is what the hub renews.
type claimKeeper struct {
	lease time.Duration

	mu      sync.Mutex
	readers map[*Reader]struct{} // live readers that hold claims
	kept    map[inboxKey]int     // agents whose claims a managed run here keeps
	renewed time.Time            // the last renewal round
}

func (k *claimKeeper) init(lease time.Duration) {
	if lease <= 0 {
		lease = DefaultClaimLease
	}
	k.lease = lease
	k.readers = map[*Reader]struct{}{}
	k.kept = map[inboxKey]int{}
}

// ClaimLease is how long a claim lasts unless something renews it.
func (h *Hub) ClaimLease() time.Duration { return h.claims.lease }

// holding adds or removes a reader that holds claims.
func (k *claimKeeper) holding(r *Reader, holds bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if holds {
		k.readers[r] = struct{}{}
	} else {
		delete(k.readers, r)
	}
}

// KeepClaims renews the claims held for the agent (AgentClaimKey) while
// the returned func is not called: a managed run of the agent on this
// daemon says it lives.
func (h *Hub) KeepClaims(ws, agent string) (done func()) {
	k := inboxKey{ws, agent}
	h.claims.mu.Lock()
	h.claims.kept[k]++
	h.claims.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			h.claims.mu.Lock()
			if h.claims.kept[k]--; h.claims.kept[k] <= 0 {
				delete(h.claims.kept, k)
			}
			h.claims.mu.Unlock()
		})
	}
}

// renewLive renews the claims of every live holder here, a round every
// quarter of the lease (so a claim is renewed three times before it could
// run out): the keys of live readers with claims, and the agent keys of the
// agents with a live session or a managed run here.
func (h *Hub) renewLive(ctx context.Context, now time.Time) {
	k := &h.claims
	k.mu.Lock()
	if now.Sub(k.renewed) < k.lease/4 {
		k.mu.Unlock()
		return
	}
	k.renewed = now
	var keys []string
	for r := range k.readers {
		keys = append(keys, r.key)
	}
	agents := map[inboxKey]bool{}
	for a := range k.kept {
		agents[a] = true
	}
	k.mu.Unlock()
	h.mu.Lock()
	for a, n := range h.sessions {
		if n > 0 {
			agents[a] = true
		}
	}
	h.mu.Unlock()
	for a := range agents {
		keys = append(keys, AgentClaimKey(a.ws, a.name))
	}
	if len(keys) == 0 {
		return
	}
	if _, err := h.store.RenewClaims(ctx, keys, nil, now.Add(k.lease)); err != nil && ctx.Err() == nil {
		h.log.Warn("renew the claims of live holders", "holders", len(keys), "err", err)
	}
}

// RenewTask extends the caller's claim on a task by lease (0: the claim
// lease) from now: its holder is alive and still at it (parley queue
// renew). readers are the keys the claim may be held by, as for Complete.
// It returns the claim as renewed; a task the caller does not hold any more
// is a Conflict that says why.
func (h *Hub) RenewTask(ctx context.Context, ws string, readers []string, taskID string, lease time.Duration) (*Delivery, error) {
	const op = "renew task"
	if lease == 0 {
		lease = h.claims.lease
	}
	if lease < MinClaimLease || lease > MaxClaimLease {
		return nil, Errorf(op, Invalid, "lease %s is out of range: want %s to %s", lease, MinClaimLease, MaxClaimLease)
	}
	d, err := h.heldTask(ctx, op, ws, taskID)
	if err != nil {
		return nil, err
	}
	held := readers[:0:0]
	for _, r := range readers {
		if r != "" {
			held = append(held, r)
		}
	}
	ds, err := h.store.RenewClaims(ctx, held, []string{taskID}, h.now().UTC().Add(lease))
	if err != nil {
		return nil, withOp(op, err)
	}
	for _, rd := range ds {
		if rd.Workspace == ws && rd.MessageID == taskID {
			return rd, nil
		}
	}
	return nil, h.notHeld(ctx, op, ws, taskID, d.Recipient)
}
