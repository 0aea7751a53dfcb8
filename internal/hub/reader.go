package hub

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"slices"
	"strings"
	"sync"
	"time"
)

// A Reader is the ledger of one reader: everything the hub hands to it is
// leased to its key until the reader is known to have it, and goes back to
// the inbox, marked redelivered, when it is known not to (see the package
// doc, "Readers"). Its methods are safe for concurrent use; a nil *Reader
// reads at once (Key is empty: what it is handed is read the moment it is
// taken) and its methods do nothing.
type Reader struct {
	h          *Hub
	key        string
	ws, agent  string
	confirm    ConfirmPolicy
	lease      time.Duration
	oneRequest bool
	live       bool // opened here, not resumed by key

	mu     sync.Mutex
	closed bool
	calls  []*readCall // oldest first: in flight, written, and the last settled ones
	claims []string

	// pending are the ids its client is known to have whose confirmation
	// is not written yet: written with the reader's next take, before
	// anything puts its leases back, or by the next sweep (confirmLater).
	// Guarded by the hub's confirmMu.
	pending []string
}

// ConfirmPolicy is how a door learns that its reader's client has what the
// reader was handed.
type ConfirmPolicy int

const (
	// ConfirmOnWrite: the client has a message once the door has written
	// the answer that carries it (Written without an error): a JSON API
	// request, a client door that writes to a socket or a queue.
	ConfirmOnWrite ConfirmPolicy = iota
	// ConfirmOnReceipt: the client says which messages it has (Receipt
	// with their ids): the bridge, a JSON API client that asked for
	// receipts.
	ConfirmOnReceipt
	// ConfirmOnNextRequest: the reader's next request says its client has
	// what earlier answers carried (Receipt without ids), unless the
	// door's check says an answer was not read: a plain MCP client over
	// HTTP.
	ConfirmOnNextRequest
)

// ReaderOptions open a Reader.
type ReaderOptions struct {
	Workspace, Agent string
	Confirm          ConfirmPolicy
	// Lease is how long what the reader is handed stays leased to it
	// unconfirmed; 0: the hub's (DefaultLease). A reader whose client
	// confirms at once takes a short one, so that what a dead client held
	// comes back soon.
	Lease time.Duration
	// OneRequest marks a reader that ends with its request (the JSON API):
	// the tasks it claims are held for its agent (AgentClaimKey), and what
	// it confirms is written at once, since no later take of its key would
	// carry the confirmation.
	OneRequest bool
	// Kind starts the key, naming the door in status views ("api", "mcp");
	// default "rd".
	Kind string
	// Key, if set, resumes the reader of an earlier request instead of
	// opening a new one (ResumeReader).
	Key string
}

// readCall is what one call (a request of the reader's client) handed out.
type readCall struct {
	id        string
	handed    []handedCopy // every copy it handed out
	open      []string     // the ids of those neither confirmed nor put back
	state     callState
	cancelled bool
	early     bool // cancelled before it handed anything out
}

// handedCopy names a copy a call handed out: its inbox and message.
type handedCopy struct {
	inbox inboxKey
	id    string
}

type callState int

const (
	inFlight callState = iota // its answer is not written yet
	written                   // written, awaiting confirmation
	settled                   // done; kept for a late cancellation
)

// keepCalls is how many settled calls a reader remembers, for a client that
// cancels a call after its answer came (an MCP client may say so only after
// its next request).
const keepCalls = 16

// OpenReader opens a reader for the agent: its key is new, unguessable and
// bound to the agent and workspace (CheckReader).
func (h *Hub) OpenReader(o ReaderOptions) *Reader {
	return &Reader{h: h, key: newReaderKey(o.Kind, o.Workspace, o.Agent), ws: o.Workspace, agent: o.Agent,
		confirm: o.Confirm, lease: o.Lease, oneRequest: o.OneRequest, live: true}
}

// ResumeReader is the reader of an earlier request, named by its key, for
// its client to confirm or give back what it was handed (Receipt): the key
// must be one OpenReader made for this agent and workspace. A JSON API
// client that asked for receipts settles this way.
func (h *Hub) ResumeReader(key, ws, agent string) (*Reader, error) {
	if err := CheckReader(key, ws, agent); err != nil {
		h.log.Warn("refused a reader of another agent", "agent", agent, "workspace", ws)
		return nil, err
	}
	return &Reader{h: h, key: key, ws: ws, agent: agent, confirm: ConfirmOnReceipt, oneRequest: true}, nil
}

var keyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newReaderKey is the kind ("rd" if none), "-", 128 random bits, "-", and
// the agent's NameHash.
func newReaderKey(kind, ws, agent string) string {
	if kind == "" {
		kind = "rd"
	}
	var b [16]byte
	rand.Read(b[:])
	return kind + "-" + strings.ToLower(keyEncoding.EncodeToString(b[:])) + "-" + NameHash(ws, agent)
}

// keyTail is the length of a reader key after its kind: "-", 26 characters
// of randomness, "-", a NameHash.
const keyTail = 1 + 26 + 1 + 12

// CheckReader refuses a reader key that OpenReader did not make for the
// agent of ws: a caller may settle only its own readers.
func CheckReader(key, ws, agent string) error {
	if len(key) <= keyTail || key[len(key)-keyTail] != '-' || key[len(key)-13] != '-' {
		return Errorf("reader", Invalid, "%q is not a reader key", key)
	}
	if key[len(key)-12:] != NameHash(ws, agent) {
		return Errorf("reader", Forbidden, "that reader is not %s's in this workspace", agent)
	}
	return nil
}

// AgentClaimKey is the key that holds the tasks an agent claims through
// readers of one request (the JSON API, the CLI): held until completed,
// released, or the lease runs out.
func AgentClaimKey(ws, agent string) string { return "claim-" + NameHash(ws, agent) }

// Key is the reader's key, which the store leases its deliveries to; ""
// for a nil reader (read at once).
func (r *Reader) Key() string {
	if r == nil {
		return ""
	}
	return r.key
}

// leaseOf is how long the reader holds what it is handed unconfirmed (0:
// the hub's default).
func (r *Reader) leaseOf() time.Duration {
	if r == nil {
		return 0
	}
	return r.lease
}

// ClaimKey is the key that holds the tasks the reader claims: its own, so
// that they go back when it closes, or its agent's for a reader of one
// request (and for a nil reader).
func (r *Reader) ClaimKey(ws, agent string) string {
	if r == nil || r.oneRequest {
		return AgentClaimKey(ws, agent)
	}
	return r.key
}

// handed records that the call handed out the deliveries (leased to Key):
// the hub's reads do, as they hand them out. What a closed reader, or a
// cancelled call, is handed goes back at once: a reader never holds a
// message its client did not get.
func (r *Reader) handed(ctx context.Context, call string, ds ...*Delivery) {
	if r == nil || len(ds) == 0 {
		return
	}
	ids := idsOf(ds)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		r.release(ctx, ids)
		return
	}
	c := r.call(call)
	switch {
	case c != nil && c.early:
		// Cancelled before it was known: it is now.
		c.early, c.state = false, inFlight
	case c == nil || c.state != inFlight:
		c = &readCall{id: call}
		r.calls = append(r.calls, c)
	}
	for _, d := range ds {
		c.handed = append(c.handed, handedCopy{inboxKey{d.Workspace, d.Recipient}, d.MessageID})
	}
	if c.cancelled {
		r.mu.Unlock()
		r.release(ctx, ids)
		return
	}
	c.open = append(c.open, ids...)
	r.mu.Unlock()
}

// HandedIn lists what the call has handed out so far: for a door that names
// them in its answer (the bridge confirms them by id).
func (r *Reader) HandedIn(call string) []string {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.call(call); c != nil && c.state == inFlight {
		return slices.Clone(c.open)
	}
	return nil
}

// Claimed records a task the reader claimed (held by ClaimKey), so that Lost
// gives it back before its lease runs out.
func (r *Reader) Claimed(taskID string) {
	if r == nil || r.oneRequest {
		return
	}
	r.mu.Lock()
	r.claims = append(r.claims, taskID)
	closed := r.closed
	r.mu.Unlock()
	if !closed {
		// Its session's life renews the claim (claims.go).
		r.h.claims.holding(r, true)
	}
}

// Written settles the call's answer: err is why it could not be written
// (its messages go back), nil that it was. Then, by the reader's policy,
// what the call handed out is confirmed (ConfirmOnWrite), awaits the
// client's receipt (ConfirmOnReceipt), or its next request
// (ConfirmOnNextRequest).
func (r *Reader) Written(ctx context.Context, call string, err error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	c := r.call(call)
	if c == nil || c.state != inFlight {
		r.mu.Unlock()
		return
	}
	ids := c.open
	back := err != nil || c.cancelled
	switch {
	case back, r.confirm == ConfirmOnWrite:
		c.state, c.open = settled, nil
	case len(c.open) == 0: // the client confirmed them all already
		c.state = settled
	default:
		c.state = written
		ids = nil
	}
	r.prune()
	r.mu.Unlock()
	if back {
		r.release(ctx, ids)
	} else {
		r.confirmed(ctx, ids)
	}
}

// Receipt is the client's word on the messages with the ids: it has them
// (received) or gives them back. It returns how many it settled.
func (r *Reader) Receipt(ctx context.Context, ids []string, received bool) (int, error) {
	if r == nil || len(ids) == 0 {
		return 0, nil
	}
	r.mu.Lock()
	for _, c := range r.calls {
		c.open = slices.DeleteFunc(c.open, func(id string) bool { return slices.Contains(ids, id) })
		if c.state == written && len(c.open) == 0 {
			c.state = settled
		}
	}
	r.prune()
	r.mu.Unlock()
	if received {
		return r.confirmed(ctx, ids)
	}
	return r.h.Release(context.WithoutCancel(ctx), r.key, ids)
}

// NextRequest is a new request of the reader's client. A client that
// confirms this way (ConfirmOnNextRequest) has what every answer written so
// far carried: its request says so. For other policies it says nothing.
func (r *Reader) NextRequest(ctx context.Context) {
	if r == nil || r.confirm != ConfirmOnNextRequest {
		return
	}
	var got []string
	r.mu.Lock()
	for _, c := range r.calls {
		if c.state == written {
			got = append(got, c.open...)
			c.state, c.open = settled, nil
		}
	}
	r.prune()
	r.mu.Unlock()
	r.confirmed(ctx, got)
}

// Cancel is the client giving up a call: what it handed out goes back,
// marked redelivered, even if it was confirmed (a client ignores the answer
// of a call it cancelled, and may say so only after its next request); what
// it hands out from now on goes back at once.
func (r *Reader) Cancel(ctx context.Context, call string) {
	if r == nil || call == "" {
		return
	}
	r.mu.Lock()
	c := r.call(call)
	if c == nil {
		// Not known yet: what it hands out later goes back.
		r.calls = append(r.calls, &readCall{id: call, cancelled: true, early: true, state: settled})
		r.prune()
		r.mu.Unlock()
		return
	}
	c.cancelled = true
	if c.state == inFlight {
		r.mu.Unlock() // Written puts it back
		return
	}
	handed := c.handed
	c.handed, c.open, c.state = nil, nil, settled
	r.mu.Unlock()
	// By inbox: a door may read for several (sidechat's receive names its
	// agent).
	byInbox := map[inboxKey][]string{}
	for _, hc := range handed {
		byInbox[hc.inbox] = append(byInbox[hc.inbox], hc.id)
	}
	for k, ids := range byInbox {
		if _, err := r.h.Reopen(context.WithoutCancel(ctx), k.ws, k.name, ids); err != nil {
			r.h.log.Warn("put back the messages of a cancelled call", "err", err)
		}
	}
}

// Lost says the client is probably gone (the connection that showed its
// life closed) though it may come back: what its written answers carried
// and it did not confirm goes back, and so do the tasks it claimed. Calls in
// flight are left to their own answers.
func (r *Reader) Lost(ctx context.Context) {
	if r == nil {
		return
	}
	var ids []string
	r.mu.Lock()
	for _, c := range r.calls {
		if c.state == written {
			ids = append(ids, c.open...)
			c.state, c.open = settled, nil
		}
	}
	claims := r.claims
	r.claims = nil
	r.mu.Unlock()
	r.h.claims.holding(r, false)
	r.release(ctx, append(ids, claims...))
}

// Close ends the reader: its client is gone. Everything leased to its key
// and not confirmed goes back to its inbox, and whatever it is handed later
// goes back as it comes.
func (r *Reader) Close(ctx context.Context) {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.calls, r.claims = nil, nil
	r.mu.Unlock()
	r.h.claims.holding(r, false)
	if _, err := r.h.Release(context.WithoutCancel(ctx), r.key, nil); err != nil {
		r.h.log.Warn("put back what a closed reader held", "err", err)
	}
}

// call finds the newest call with the id. r.mu is held.
func (r *Reader) call(id string) *readCall {
	for i := len(r.calls) - 1; i >= 0; i-- {
		if r.calls[i].id == id {
			return r.calls[i]
		}
	}
	return nil
}

// prune forgets the oldest settled calls past keepCalls. r.mu is held.
func (r *Reader) prune() {
	n := 0
	for _, c := range r.calls {
		if c.state == settled {
			n++
		}
	}
	if n <= keepCalls {
		return
	}
	r.calls = slices.DeleteFunc(r.calls, func(c *readCall) bool {
		if c.state == settled && n > keepCalls {
			n--
			return true
		}
		return false
	})
}

// confirmed confirms ids for the reader: lazily for a reader that reads on
// (confirmLater), at once for one of one request.
func (r *Reader) confirmed(ctx context.Context, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	if r.oneRequest {
		n, err := r.h.Confirm(context.WithoutCancel(ctx), r.key, ids)
		if err != nil {
			r.h.log.Warn("confirm delivered messages", "err", err)
		}
		return n, err
	}
	r.confirmLater(ids)
	return len(ids), nil
}

// confirmLater notes that the reader's client has the messages, and leaves
// writing it to the reader's next take, in the same transaction; or to
// before anything puts the reader's leases back; or to the next sweep,
// whichever comes first (Hub.flushConfirms). It speaks only for what the
// reader held when it was made. A daemon that dies before it is written
// hands the messages out again, marked redelivered, which at-least-once
// allows: in exchange, a read costs one store write instead of two.
func (r *Reader) confirmLater(ids []string) {
	if r == nil || len(ids) == 0 {
		return
	}
	r.h.confirmMu.Lock()
	r.pending = append(r.pending, ids...)
	r.h.owed[r.key] = r
	r.h.confirmMu.Unlock()
}

// release puts ids back in their inboxes.
func (r *Reader) release(ctx context.Context, ids []string) {
	if len(ids) == 0 {
		return
	}
	if _, err := r.h.Release(context.WithoutCancel(ctx), r.key, ids); err != nil {
		r.h.log.Warn("put back undelivered messages", "err", err)
	}
}

// Renamed says the reader's agent renamed itself (Hub.Rename moved its
// copies, leases and all, to the new name): what it holds is now in the
// new name's inbox, where a cancelled call puts it back.
func (r *Reader) Renamed(ws, old, new string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ws == ws && r.agent == old {
		r.agent = new
	}
	for _, c := range r.calls {
		for i, hc := range c.handed {
			if hc.inbox == (inboxKey{ws, old}) {
				c.handed[i].inbox = inboxKey{ws, new}
			}
		}
	}
}
