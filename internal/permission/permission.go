// Package permission is the one inbox of permission requests for every agent:
// managed agents (the self profile's request_permission), Claude Code and
// Codex sessions that Parley did not launch (their PermissionRequest hooks,
// the channel permission relay), and Codex app-server approvals. A request is
// filed, persisted, announced, and decided once: the first decision wins,
// from whichever front door (CLI, a manager agent, the dashboard), and later
// ones are told it was already decided. Whoever filed it waits for the
// decision. The daemon owns the inbox; runner, ops and the front doors call
// it. It imports hub for its error kinds and names.
package permission

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// State is where a request is in its life: pending until decided, then one
// of the final states.
type State string

// The states of a request.
const (
	Pending   State = "pending"
	Allowed   State = "allowed"
	Denied    State = "denied"
	Expired   State = "expired"   // nobody decided in time; the asker fell back (its own prompt, or deny)
	Abandoned State = "abandoned" // the asker went away (run ended, agent killed, session closed)
)

// Sources of requests.
const (
	SourceManaged    = "managed"     // a managed agent's request_permission
	SourceClaudeHook = "claude-hook" // parley hook claude PermissionRequest
	SourceCodexHook  = "codex-hook"  // parley hook codex PermissionRequest
	SourceChannel    = "channel"     // Claude Code's channel permission relay
	SourceCodexApp   = "codex-app"   // a codex app-server approval
)

// Request is one permission request.
type Request struct {
	ID          string          `json:"request_id"`
	Workspace   string          `json:"workspace"`
	Agent       string          `json:"agent_id"`
	Source      string          `json:"source"`
	Tool        string          `json:"tool_name"`
	Input       json.RawMessage `json:"input"`
	ToolUseID   string          `json:"tool_use_id,omitempty"`
	Description string          `json:"description,omitempty"`
	Run         int             `json:"run,omitempty"`
	RequestedAt time.Time       `json:"requested_at"`
	ExpiresAt   time.Time       `json:"expires_at"`
	State       State           `json:"state"`
	Decision    *Decision       `json:"decision,omitempty"`
}

// Decision answers a request.
type Decision struct {
	Allow        bool            `json:"allow"`
	Message      string          `json:"message,omitempty"`
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"` // replaces the tool's input when allowing
	By           string          `json:"by"`                      // who decided: cli, manager, dashboard, timeout...
	At           time.Time       `json:"at"`
}

// Behavior is the decision as the clients spell it: allow or deny.
func (d *Decision) Behavior() string {
	if d.Allow {
		return "allow"
	}
	return "deny"
}

// Store keeps requests. DecidePermission must be atomic: it records the
// outcome only when the request is still pending, and reports whether it did,
// so that the first decision wins even between daemons sharing a store.
type Store interface {
	PutPermission(ctx context.Context, r *Request) error
	DecidePermission(ctx context.Context, id string, st State, d *Decision) (bool, error)
	Permission(ctx context.Context, id string) (*Request, error)
	PendingPermissions(ctx context.Context, ws string) ([]*Request, error)
}

// EventKind names a change of the inbox.
type EventKind string

// The inbox's events.
const (
	EventRequested EventKind = "permission.requested"
	EventResolved  EventKind = "permission.resolved" // decided, expired or abandoned
)

// Event is one change: a request filed, or its outcome.
type Event struct {
	Kind    EventKind
	Request Request
}

// Options configure an Inbox; zero values mean defaults.
type Options struct {
	Timeout time.Duration // how long a request stays pending; default DefaultTimeout
	Logger  *slog.Logger
}

// DefaultTimeout is how long a request waits for a decision by default.
const DefaultTimeout = 10 * time.Minute

// Limits on what a request carries.
const (
	MaxInput       = 256 << 10
	maxDescription = 4 << 10
)

// Inbox is the permission inbox of one daemon.
type Inbox struct {
	store Store
	opts  Options
	log   *slog.Logger

	mu      sync.Mutex
	waiters map[string][]chan struct{} // by request id: closed when it is decided
	subs    map[int]func(Event)
	nextSub int
	rules   []*Rule // time-boxed allow rules (rules.go)
}

// New returns an inbox over store.
func New(store Store, opts *Options) *Inbox {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Inbox{store: store, opts: o, log: o.Logger, waiters: map[string][]chan struct{}{}, subs: map[int]func(Event){}}
}

// Timeout is how long a request stays pending unless its filer says otherwise.
func (in *Inbox) Timeout() time.Duration { return in.opts.Timeout }

// Subscribe calls fn for every event until the returned function is called.
// fn runs on the caller's goroutine of the change: it must not block.
func (in *Inbox) Subscribe(fn func(Event)) (cancel func()) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.nextSub++
	id := in.nextSub
	in.subs[id] = fn
	return func() {
		in.mu.Lock()
		defer in.mu.Unlock()
		delete(in.subs, id)
	}
}

func (in *Inbox) publish(e Event) {
	in.mu.Lock()
	fns := make([]func(Event), 0, len(in.subs))
	for _, fn := range in.subs {
		fns = append(fns, fn)
	}
	in.mu.Unlock()
	for _, fn := range fns {
		fn(e)
	}
}

// File records a new pending request and announces it. The inbox fills in
// the id, the times and the state; a zero ExpiresAt means the inbox's timeout.
func (in *Inbox) File(ctx context.Context, r Request) (*Request, error) {
	const op = "request_permission"
	if err := hub.ValidWorkspace(r.Workspace); err != nil {
		return nil, err
	}
	if strings.TrimSpace(r.Tool) == "" {
		return nil, hub.Errorf(op, hub.Invalid, "tool_name must not be empty")
	}
	r.Input = bytes.TrimSpace(r.Input)
	if len(r.Input) == 0 || string(r.Input) == "null" {
		r.Input = json.RawMessage("{}")
	}
	if len(r.Input) > MaxInput {
		return nil, hub.Errorf(op, hub.TooLarge, "input over %d bytes", MaxInput)
	}
	if !json.Valid(r.Input) {
		return nil, hub.Errorf(op, hub.Invalid, "input must be JSON")
	}
	if len(r.Description) > maxDescription {
		r.Description = r.Description[:maxDescription]
	}
	now := time.Now().UTC()
	r.ID, r.RequestedAt, r.State, r.Decision = NewID(), now, Pending, nil
	if r.ExpiresAt.IsZero() {
		r.ExpiresAt = now.Add(in.opts.Timeout)
	}
	if err := in.store.PutPermission(ctx, &r); err != nil {
		return nil, err
	}
	in.log.Info("permission requested", "request", r.ID, "agent", r.Agent, "source", r.Source, "tool", r.Tool)
	in.publish(Event{Kind: EventRequested, Request: r})
	return in.applyRules(ctx, &r), nil
}

// NewID returns a fresh request id.
func NewID() string {
	var b [6]byte
	rand.Read(b[:])
	return "perm-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// Decide records d for request id of workspace ws ("" finds it in any). The
// first decision wins; a later one gets a Conflict error that says how it
// was decided.
func (in *Inbox) Decide(ctx context.Context, ws, id string, d Decision) (*Request, error) {
	const op = "respond_to_permission"
	if d.UpdatedInput != nil && !d.Allow {
		return nil, hub.Errorf(op, hub.Invalid, "updated_input goes with allow, not deny")
	}
	st := Denied
	if d.Allow {
		st = Allowed
	}
	return in.settle(ctx, op, ws, id, st, d)
}

// Close ends request id without a decision (Expired or Abandoned) if it is
// still pending, and returns it as it now is: decided by someone else when
// a decision won the race.
func (in *Inbox) Close(ctx context.Context, id string, st State, why string) (*Request, error) {
	r, err := in.settle(ctx, "close permission", "", id, st, Decision{Message: why, By: string(st)})
	if hub.KindOf(err) == hub.Conflict {
		return in.store.Permission(ctx, id)
	}
	return r, err
}

func (in *Inbox) settle(ctx context.Context, op, ws, id string, st State, d Decision) (*Request, error) {
	r, err := in.store.Permission(ctx, id)
	if hub.IsNotFound(err) || err == nil && ws != "" && r.Workspace != ws {
		where := ""
		if ws != "" {
			where = " in workspace " + ws
		}
		return nil, hub.Errorf(op, hub.NotFound, "no permission request %q%s (see list_pending_permissions or `parley permissions`)", id, where)
	}
	if err != nil {
		return nil, err
	}
	if r.State == Pending && d.UpdatedInput != nil {
		var obj map[string]any
		if json.Unmarshal(d.UpdatedInput, &obj) != nil || obj == nil {
			return nil, hub.Errorf(op, hub.Invalid, "updated_input must be a JSON object (the tool's input)")
		}
	}
	d.At = time.Now().UTC()
	won := false
	if r.State == Pending {
		if won, err = in.store.DecidePermission(ctx, id, st, &d); err != nil {
			return nil, err
		}
	}
	if !won {
		if r, err = in.store.Permission(ctx, id); err != nil {
			return nil, err
		}
		return nil, hub.Errorf(op, hub.Conflict, "permission request %s was already decided: %s", id, Describe(r))
	}
	r.State, r.Decision = st, &d
	in.log.Info("permission settled", "request", id, "state", st, "by", d.By)
	in.wake(id)
	in.publish(Event{Kind: EventResolved, Request: *r})
	return r, nil
}

// Describe says how a request ended, for people: "allowed by cli at ...".
func Describe(r *Request) string {
	if r.State == Pending || r.Decision == nil {
		return "pending"
	}
	s := fmt.Sprintf("%s by %s at %s", r.State, r.Decision.By, r.Decision.At.Format(time.RFC3339))
	if r.State == Expired || r.State == Abandoned {
		s = fmt.Sprintf("%s at %s", r.State, r.Decision.At.Format(time.RFC3339))
	}
	if r.Decision.Message != "" {
		s += ": " + r.Decision.Message
	}
	return s
}

func (in *Inbox) wake(id string) {
	in.mu.Lock()
	ws := in.waiters[id]
	delete(in.waiters, id)
	in.mu.Unlock()
	for _, ch := range ws {
		close(ch)
	}
}

// Wait blocks until request id is no longer pending, or ctx ends, and
// returns it. It registers before it looks, so no decision is missed.
func (in *Inbox) Wait(ctx context.Context, id string) (*Request, error) {
	for {
		ch := make(chan struct{})
		in.mu.Lock()
		in.waiters[id] = append(in.waiters[id], ch)
		in.mu.Unlock()
		r, err := in.store.Permission(ctx, id)
		if err != nil || r.State != Pending {
			in.drop(id, ch)
			return r, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			in.drop(id, ch)
			return r, ctx.Err()
		}
	}
}

func (in *Inbox) drop(id string, ch chan struct{}) {
	in.mu.Lock()
	defer in.mu.Unlock()
	ws := in.waiters[id]
	for i, c := range ws {
		if c == ch {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(in.waiters, id)
	} else {
		in.waiters[id] = ws
	}
}

// Ask files r and waits for its outcome until its expiry (at most wait, when
// wait > 0) or ctx ends; a request nobody decided is closed as Expired (or
// Abandoned when ctx ended), unless a decision won the race.
func (in *Inbox) Ask(ctx context.Context, r Request, wait time.Duration) (*Request, error) {
	if wait > 0 && r.ExpiresAt.IsZero() {
		r.ExpiresAt = time.Now().UTC().Add(wait)
	}
	if err := ctx.Err(); err != nil {
		return nil, hub.Errorf("request_permission", hub.Unavailable, "the asker went away: %w", err)
	}
	// The insert runs to its end even when the asker goes away meanwhile:
	// a store stopped mid-insert may have written the request anyway, and one
	// Ask cannot name would stay pending until it expires. Once filed, the
	// wait below sees ctx ended and closes it as Abandoned.
	filed, err := in.File(context.WithoutCancel(ctx), r)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithDeadline(ctx, filed.ExpiresAt)
	defer cancel()
	got, err := in.Wait(wctx, filed.ID)
	if err == nil {
		return got, nil
	}
	st, why := Expired, fmt.Sprintf("no decision within %s", filed.ExpiresAt.Sub(filed.RequestedAt).Round(time.Second))
	if ctx.Err() != nil {
		st, why = Abandoned, "the request was abandoned"
	}
	return in.Close(context.WithoutCancel(ctx), filed.ID, st, why)
}

// Pending lists the pending requests of ws ("" for every workspace), oldest
// first.
func (in *Inbox) Pending(ctx context.Context, ws string) ([]*Request, error) {
	return in.store.PendingPermissions(ctx, ws)
}

// Get returns request id of ws ("" for any).
func (in *Inbox) Get(ctx context.Context, ws, id string) (*Request, error) {
	r, err := in.store.Permission(ctx, id)
	if err == nil && ws != "" && r.Workspace != ws {
		err = hub.Errorf("permission", hub.NotFound, "no permission request %q in workspace %s", id, ws)
	}
	return r, err
}

// Wake makes the waits for request id look at the store again. A notifier
// calls it when another daemon sharing the store decided the request.
func (in *Inbox) Wake(id string) { in.wake(id) }

// WakeAll makes every wait look at the store again: after a notifier lost its
// connection, decisions made elsewhere meanwhile may have gone unheard.
func (in *Inbox) WakeAll() {
	in.mu.Lock()
	ids := make([]string, 0, len(in.waiters))
	for id := range in.waiters {
		ids = append(ids, id)
	}
	in.mu.Unlock()
	for _, id := range ids {
		in.wake(id)
	}
}
