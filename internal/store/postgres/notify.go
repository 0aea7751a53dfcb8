package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parley-dev/parley/internal/hub"
)

// channel is the LISTEN/NOTIFY channel of the daemons' events. Notifications
// stay inside one database, so daemons on different databases never hear
// each other.
const channel = "parley_wake"

// maxPayload keeps a notification under PostgreSQL's 8000-byte limit.
const maxPayload = 7900

// Event queue bounds: Announce queues up to announceQueue events without
// blocking; one statement carries up to announceBatch of them.
const (
	announceQueue = 16384
	announceBatch = 2048
)

// Waker is what the notifier needs of the hub: relay the other daemons'
// events, and wake every waiter (after a lost connection, when events may
// have been missed).
type Waker = hub.Waker

// TokenWaker is what the notifier needs of the daemon's open agent-token
// sessions and requests (token.Watcher): Revoked ends what is open under the
// token with the id; Recheck looks at the store for tokens revoked while
// nobody listened.
type TokenWaker = interface {
	Revoked(id string)
	Recheck()
}

// Notifier is hub.Notifier over LISTEN/NOTIFY: Announce tells every daemon on
// the database of an event here, and Run listens for the others' and relays
// them to the local hub. A daemon ignores its own notifications: its hub
// published them already. Sends tell the others in their own transaction
// (sendbatch.go); Announce carries the rest, batched, on the lazy pool.
type Notifier struct {
	db     *DB
	log    *slog.Logger
	origin string // its store's (DB.origin): its own notifications are skipped

	events chan hub.Event // Announce's queue
	// lost: events were dropped (the queue was full, or a statement
	// failed): the next notification tells the others to look again.
	lost atomic.Bool

	// Tokens, if set before Run, hears of agent tokens revoked on other
	// daemons (RevokeToken there).
	Tokens TokenWaker

	listening atomic.Bool
	// Reconnects counts how often the listening connection was set up again
	// after it was lost; each time, every local waiter looked again.
	Reconnects atomic.Int64
	// Dropped counts the events Announce could not carry.
	Dropped atomic.Int64
	// Relayed counts the other daemons' events given to the hub.
	Relayed atomic.Int64
	// CaughtUp counts the notifications read from relay_events after a
	// reconnect, that the listening connection missed.
	CaughtUp atomic.Int64

	// The seqs of relay_events seen (listen's own): each is relayed once,
	// whether it comes by notification or by a catch-up.
	last int64
	seen map[int64]struct{}
}

// Catch-up bounds: a reconnected listener reads relay_events from catchUpBack
// seqs before the last it saw (notifications arrive in commit order, which
// may differ from seq order), skipping those it saw; rows older than
// relayKeep are deleted, so an outage longer than that is caught up by every
// waiter looking at the store again.
const (
	catchUpBack = 4096
	relayKeep   = 10 * time.Minute
)

// wire is a notification's payload.
type wire struct {
	Origin string            `json:"o"`
	Events []json.RawMessage `json:"e,omitempty"` // events.go
	All    bool              `json:"a,omitempty"` // events were lost: look at everything again
	Token  string            `json:"t,omitempty"` // an agent token was revoked

	// A wake-up of the recipients of a workspace, as daemons before events
	// traveled sent it.
	Workspace  string   `json:"w,omitempty"`
	Recipients []string `json:"r,omitempty"`
}

var (
	_ hub.Notifications  = (*Notifier)(nil)
	_ hub.NotifyingStore = (*DB)(nil)
)

// notePayload encodes a notification of one fact.
func notePayload(w wire) string {
	b, _ := json.Marshal(w) // strings and bools only: it cannot fail
	return string(b)
}

// newOrigin names this process in its notifications.
func newOrigin() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// NewNotifier returns the notifier of db's database; Run must be running for it
// to deliver or hear anything.
func (db *DB) NewNotifier() *Notifier {
	return &Notifier{db: db, log: db.log, origin: db.origin, events: make(chan hub.Event, announceQueue)}
}

// Notifications is NewNotifier for the daemon, which knows the store only as a
// hub.NotifyingStore.
func (db *DB) Notifications() hub.Notifications { return db.NewNotifier() }

// SetTokens sets Tokens, for a caller that has the notifier as an interface:
// call it before Run.
func (n *Notifier) SetTokens(w TokenWaker) { n.Tokens = w }

// Announce queues e for the other daemons and returns at once. When the
// queue is full the event is dropped, and the next notification tells the
// others to look at the store again.
func (n *Notifier) Announce(e hub.Event) {
	if e.Remote || e.Kind == hub.EventResync {
		return
	}
	select {
	case n.events <- e:
	default:
		n.Dropped.Add(1)
		n.lost.Store(true)
	}
}

// Listening reports whether the listening connection is up.
func (n *Notifier) Listening() bool { return n.listening.Load() }

// Run sends the events that Announce queues and listens for the other
// daemons' until ctx ends. When the listening connection is lost (PostgreSQL
// restarted, a network cut, pg_terminate_backend), it connects again with
// backoff and then wakes every local waiter, which looks at the store again:
// an event missed meanwhile delays no message.
func (n *Notifier) Run(ctx context.Context, w Waker) {
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		n.send(ctx)
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		n.prune(ctx)
	}()
	n.listen(ctx, w)
	<-done
	<-done
}

// prune deletes the relayed events older than relayKeep, every minute.
func (n *Notifier) prune(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := n.db.lazy.Exec(ctx, `DELETE FROM relay_events WHERE at < now() - $1::interval`, relayKeep); err != nil && ctx.Err() == nil {
				n.log.Warn("prune relayed events", "err", n.db.mapErr(ctx, "prune", err))
			}
		}
	}
}

// mark records seq as seen and reports whether it was new.
func (n *Notifier) mark(seq int64) bool {
	if n.seen == nil {
		n.seen = map[int64]struct{}{}
	}
	if _, ok := n.seen[seq]; ok || seq <= n.last-catchUpBack {
		return false
	}
	n.seen[seq] = struct{}{}
	if seq > n.last {
		n.last = seq
	}
	if len(n.seen) > 4*catchUpBack {
		for s := range n.seen {
			if s <= n.last-catchUpBack {
				delete(n.seen, s)
			}
		}
	}
	return true
}

// catchUp relays, in order, the events kept in relay_events that this
// listener has not seen: those committed while it was not listening. On its
// first connection it only learns where the table ends.
// It reads on the pool: the listening connection stays a plain listener.
func (n *Notifier) catchUp(ctx context.Context, w Waker, first bool) error {
	conn := n.db.pool
	if first {
		return conn.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM relay_events`).Scan(&n.last)
	}
	rows, err := conn.Query(ctx, `SELECT seq, payload FROM relay_events WHERE seq > $1 ORDER BY seq`, n.last-catchUpBack)
	if err != nil {
		return err
	}
	type row struct {
		seq     int64
		payload string
	}
	rs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		return x, r.Scan(&x.seq, &x.payload)
	})
	if err != nil {
		return err
	}
	caught := 0
	for _, r := range rs {
		if n.handle(ctx, w, r.seq, r.payload) {
			caught++
		}
	}
	n.CaughtUp.Add(int64(caught))
	if caught > 0 {
		n.log.Info("caught up on the other daemons' events missed while not listening", "notifications", caught)
	}
	return nil
}

// handle relays one notification's payload (after its seq, if it has one:
// seq 0 for one that relay_events does not keep), once per seq. It reports
// whether it was new.
func (n *Notifier) handle(ctx context.Context, w Waker, seq int64, payload string) bool {
	if seq > 0 && !n.mark(seq) {
		return false
	}
	var msg wire
	if err := json.Unmarshal([]byte(payload), &msg); err != nil {
		n.log.Warn("bad wake-up notification", "err", err)
		return false
	}
	switch {
	case msg.Origin == n.origin:
		return false
	case msg.Token != "":
		if n.Tokens != nil {
			n.Tokens.Revoked(msg.Token)
		}
	case msg.All:
		w.WakeAll()
	case len(msg.Events) > 0:
		n.Relayed.Add(int64(len(msg.Events)))
		n.relay(ctx, w, msg.Events)
	default:
		w.Wake(msg.Workspace, msg.Recipients)
	}
	return true
}

// splitSeq parses a notification's payload: "SEQ JSON" for one kept in
// relay_events, or plain JSON (seq 0).
func splitSeq(p string) (int64, string) {
	if i := strings.IndexByte(p, ' '); i > 0 && p[0] >= '0' && p[0] <= '9' {
		if seq, err := strconv.ParseInt(p[:i], 10, 64); err == nil {
			return seq, p[i+1:]
		}
	}
	return 0, p
}

// send commits queued events, all that arrived during the previous commit
// (up to announceBatch) in one statement.
func (n *Notifier) send(ctx context.Context) {
	evs := make([][]byte, 0, 64)
	for {
		evs = evs[:0]
		select {
		case e := <-n.events:
			evs = append(evs, encodeEvent(e))
		case <-ctx.Done():
			return
		}
	gather:
		for len(evs) < announceBatch {
			select {
			case e := <-n.events:
				evs = append(evs, encodeEvent(e))
			default:
				break gather
			}
		}
		payloads := eventPayloads(n.origin, evs)
		if n.lost.Swap(false) {
			payloads = append(payloads, notePayload(wire{Origin: n.origin, All: true}))
		}
		// A bound, so a server that stopped answering does not hold the
		// queue forever. On the lazy pool: listeners hear a NOTIFY when its
		// transaction commits, before its WAL reaches disk, and an event
		// lost in a power cut is a hint lost, never state.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_, err := n.db.lazy.Exec(sctx, notify, channel, payloads)
		cancel()
		if err != nil {
			n.log.Warn("tell the other daemons", "events", len(evs), "err", n.db.mapErr(ctx, "notify", err))
			n.Dropped.Add(int64(len(evs)))
			n.lost.Store(true)
		}
	}
}

func (n *Notifier) listen(ctx context.Context, w Waker) {
	const minBackoff, maxBackoff = 50 * time.Millisecond, 5 * time.Second
	backoff := minBackoff
	first := true
	for ctx.Err() == nil {
		conn, err := pgx.Connect(ctx, n.db.dsn)
		if err == nil {
			if _, err = conn.Exec(ctx, "LISTEN "+channel); err != nil {
				conn.Close(context.Background())
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			n.log.Warn("listen for other daemons' events", "err", n.db.mapErr(ctx, "listen", err), "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			backoff = min(backoff*2, maxBackoff)
			continue
		}
		backoff = minBackoff
		// Listening: what commits from now on is notified; what committed
		// while nobody listened is in relay_events.
		if err := n.catchUp(ctx, w, first); err != nil {
			if ctx.Err() != nil {
				conn.Close(context.Background())
				return
			}
			n.log.Warn("catch up on the other daemons' events", "err", n.db.mapErr(ctx, "listen", err))
		}
		n.listening.Store(true)
		if !first {
			n.Reconnects.Add(1)
			n.log.Info("listening again for other daemons' wake-ups")
		}
		first = false
		// Whatever was sent while nobody listened is lost to us: every waiter
		// and subscriber looks at the store again.
		w.WakeAll()
		if n.Tokens != nil {
			n.Tokens.Recheck()
		}
		for {
			nt, err := conn.WaitForNotification(ctx)
			if err != nil {
				if ctx.Err() == nil {
					n.log.Warn("lost the connection that listens for wake-ups", "err", err)
					// Most often the server went away (a restart): the pools'
					// idle connections are as dead as this one, and the next
					// call on each would fail. Close them now.
					n.db.pool.Reset()
					n.db.lazy.Reset()
				}
				break
			}
			seq, payload := splitSeq(nt.Payload)
			n.handle(ctx, w, seq, payload)
		}
		n.listening.Store(false)
		conn.Close(context.Background())
	}
}
