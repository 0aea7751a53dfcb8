package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
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
}

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
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.send(ctx)
	}()
	n.listen(ctx, w)
	<-done
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
			var msg wire
			if err := json.Unmarshal([]byte(nt.Payload), &msg); err != nil {
				n.log.Warn("bad wake-up notification", "err", err)
				continue
			}
			switch {
			case msg.Origin == n.origin:
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
		}
		n.listening.Store(false)
		conn.Close(context.Background())
	}
}
