package hub

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Defaults and limits.
const (
	DefaultMaxContent  = 256 << 10 // bytes of content plus payload in one message
	DefaultWaitTimeout = 300 * time.Second
	MaxWaitTimeout     = 600 * time.Second
	ActiveWindow       = 2 * time.Minute // seen this recently counts as active
	DefaultCheckLimit  = 50
	MaxCheckLimit      = 1000
	maxMetadataEntries = 64

	// touchEvery bounds how often a busy agent's last-seen time is written.
	touchEvery = 20 * time.Second
)

// Options configure a Hub. The zero value means defaults.
type Options struct {
	Logger     *slog.Logger     // nil: discard
	MaxContent int              // bytes; 0: DefaultMaxContent
	Now        func() time.Time // nil: time.Now
	// Notifier carries wake-ups to other daemons sharing the store; nil
	// wakes this process's waiters only.
	Notifier Notifier
	// Lease is how long a reader holds a delivery it does not confirm;
	// 0: DefaultLease.
	Lease time.Duration
	// SweepEvery is how often Run sweeps; 0: DefaultSweepEvery.
	SweepEvery time.Duration
	// Host names this daemon's machine, shown for agents whose store does
	// not record where they were seen (SQLite: every agent is local).
	Host string
	// ResponseBudget bounds the bytes of messages one check or peek hands
	// out (limits.go); 0: DefaultResponseBudget.
	ResponseBudget int
	// StallAfter is how long a turn may show no progress before its agent
	// is stalled (health.go); 0: DefaultStallAfter.
	StallAfter time.Duration
	// TTL is the time to live of a message that names none: a copy that
	// nothing reached by then bounces back to its sender (door.go). 0:
	// DefaultTTL; NoTTL: none.
	TTL time.Duration
	// DeadAfter is how long this daemon may miss its heartbeat before the
	// others on a shared store take it for dead and give back what it held
	// (liveness.go); 0: DefaultDeadAfter.
	DeadAfter time.Duration
	// ProvisionalGrace is how long an agent that its session's start
	// registered and that never made a call outlives its session
	// (lifetime.go); 0: DefaultProvisionalGrace.
	ProvisionalGrace time.Duration
	// UnjoinedTTL is the time to live of a message that names none, sent
	// to a name that never joined (unjoined.go); 0: DefaultUnjoinedTTL;
	// NoTTL: the default TTL, as for any other message.
	UnjoinedTTL time.Duration
	// ClaimLease is how long a claim lasts unless its holder's liveness
	// renews it (claims.go); 0: DefaultClaimLease.
	ClaimLease time.Duration
}

// DefaultTTL is a message's time to live when neither it nor the daemon's
// configuration names one.
const DefaultTTL = 24 * time.Hour

// Hub is the message bus of every workspace the daemon serves.
type Hub struct {
	store      Store
	log        *slog.Logger
	now        func() time.Time
	maxContent int
	budget     int
	notifier   Notifier
	lease      time.Duration
	sweepEvery time.Duration
	deadAfter  time.Duration
	host       string
	ttl        time.Duration // 0: none
	// unjoinedTTL: for mail to a name that never joined (unjoined.go);
	// provisionalGrace: how long a provisional agent outlives its session
	// (lifetime.go).
	unjoinedTTL, provisionalGrace time.Duration

	mu       sync.Mutex
	waiters  map[inboxKey]map[*waiter]struct{}
	sessions map[inboxKey]int       // open MCP sessions per agent
	seen     map[inboxKey]time.Time // last seen, in memory, fresher than the store
	written  map[inboxKey]time.Time // last-seen time last written to the store
	left     map[inboxKey]time.Time // when the agent's last session ended (agents.go)
	early    map[string]time.Time   // letters seen before their copies were recorded (letter.go)

	// leftMu orders the writes of a PresenceStore's left times (agents.go).
	leftMu sync.Mutex

	// owed indexes, by key, the readers whose confirmations are not
	// written yet (each holds its own: Reader.pending). confirmMu guards
	// it and every reader's pending list.
	confirmMu sync.Mutex
	owed      map[string]*Reader

	entropyMu sync.Mutex
	entropy   *ulid.MonotonicEntropy

	// roles are agents' roles, for the origin of their messages (roles.go).
	roles roleCache
	// recipients are the plain names sends reached lately (confusable.go).
	recipients recipientCache
	// aliases are agents' old names, per workspace (alias.go).
	aliases aliasCache
	// holders are the client sessions whose live sessions speak as each
	// agent (holders.go).
	holders holders
	// provisional are the provisional agents (lifetime.go).
	provisional provisionals
	// claims are the holders of claims whose liveness renews them (claims.go).
	claims claimKeeper
	// fence is this daemon's standing with the others on a shared store
	// (liveness.go).
	fence fence

	// acts are what the agents are doing, for their health (health.go).
	actMu      sync.Mutex
	acts       map[inboxKey]*activity
	stallAfter time.Duration
	// asks are the replies agents wait for (work.go).
	asksMu sync.Mutex
	asks   map[inboxKey][]ask
	// conflicts are the recent reservation conflicts (views.go).
	conflicts conflictLog

	subsMu  sync.RWMutex
	subs    map[int]func(Event)
	nextSub int
}

type inboxKey struct{ ws, name string }

// New returns a hub that keeps its state in store.
func New(store Store, opts *Options) *Hub {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.MaxContent <= 0 {
		o.MaxContent = DefaultMaxContent
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ResponseBudget <= 0 {
		o.ResponseBudget = DefaultResponseBudget
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.SweepEvery <= 0 {
		o.SweepEvery = DefaultSweepEvery
	}
	if o.StallAfter <= 0 {
		o.StallAfter = DefaultStallAfter
	}
	switch {
	case o.TTL == 0:
		o.TTL = DefaultTTL
	case o.TTL < 0:
		o.TTL = 0
	}
	if o.DeadAfter <= 0 {
		o.DeadAfter = DefaultDeadAfter
	}
	if o.ProvisionalGrace <= 0 {
		o.ProvisionalGrace = DefaultProvisionalGrace
	}
	switch {
	case o.UnjoinedTTL == 0:
		o.UnjoinedTTL = DefaultUnjoinedTTL
	case o.UnjoinedTTL < 0:
		o.UnjoinedTTL = 0
	}
	h := &Hub{
		store:      store,
		log:        o.Logger,
		now:        o.Now,
		maxContent: o.MaxContent,
		budget:     o.ResponseBudget,
		notifier:   o.Notifier,
		lease:      o.Lease,
		sweepEvery: o.SweepEvery,
		deadAfter:  o.DeadAfter,
		host:       o.Host,
		ttl:        o.TTL,
		waiters:    make(map[inboxKey]map[*waiter]struct{}),
		sessions:   make(map[inboxKey]int),
		seen:       make(map[inboxKey]time.Time),
		written:    make(map[inboxKey]time.Time),
		left:       make(map[inboxKey]time.Time),
		early:      make(map[string]time.Time),
		owed:       make(map[string]*Reader),
		acts:       make(map[inboxKey]*activity),
		stallAfter: o.StallAfter,
		asks:       make(map[inboxKey][]ask),
		entropy:    ulid.Monotonic(rand.Reader, 0),
	}
	h.unjoinedTTL, h.provisionalGrace = o.UnjoinedTTL, o.ProvisionalGrace
	h.claims.init(o.ClaimLease)
	return h
}

// Store returns the hub's store.
func (h *Hub) Store() Store { return h.store }

// MaxContent is the largest message (content plus payload) the hub accepts.
func (h *Hub) MaxContent() int { return h.maxContent }

// NewID is a new ULID of this hub's clock (a letter's id, for one).
func (h *Hub) NewID() string { return h.newID(h.now()) }

func (h *Hub) newID(t time.Time) string {
	h.entropyMu.Lock()
	defer h.entropyMu.Unlock()
	return ulid.MustNew(ulid.Timestamp(t), h.entropy).String()
}

// withOp names the operation on an error that lacks one, keeping its kind.
func withOp(op string, err error) error {
	if err == nil {
		return nil
	}
	var kind Kind = Internal
	if e, ok := err.(*Error); ok {
		if e.Op != "" {
			return err
		}
		return &Error{Op: op, Kind: e.Kind, Err: e.Err}
	}
	switch {
	case err == context.Canceled:
		kind = Unavailable
	case err == context.DeadlineExceeded:
		kind = Timeout
	default:
		kind = KindOf(err)
	}
	return &Error{Op: op, Kind: kind, Err: err}
}
