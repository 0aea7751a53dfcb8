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

// channel is the LISTEN/NOTIFY channel of wake-ups. Notifications stay inside
// one database, so daemons on different databases never hear each other.
const channel = "parley_wake"

// maxPayload keeps a notification under PostgreSQL's 8000-byte limit; a
// wake-up that would not fit wakes the whole workspace instead.
const maxPayload = 7900

// Waker is what the notifier needs of the hub: wake the waiters of some
// inboxes, or of every inbox (after a lost connection, when wake-ups may have
// been missed).
type Waker = hub.Waker

// TokenWaker is what the notifier needs of the daemon's open agent-token
// sessions and requests (token.Watcher): Revoked ends what is open under the
// token with the id; Recheck looks at the store for tokens revoked while
// nobody listened.
type TokenWaker = interface {
	Revoked(id string)
	Recheck()
}

// PermissionWaker is what the notifier needs of the permission inbox.
type PermissionWaker = interface {
	Wake(id string)
	WakeAll()
}

// Notifier is hub.Notifier over LISTEN/NOTIFY: Notify tells every daemon on the
// database which inboxes have new messages, and Run listens for what the
// others send and wakes the local waiters. A daemon ignores its own
// notifications: the hub woke its local waiters already.
type Notifier struct {
	db     *DB
	log    *slog.Logger
	origin string // its store's (DB.origin): its own notifications are skipped

	reqs    chan *note
	stopped chan struct{} // closed when Run has ended

	// Permissions, if set before Run, hears of permission requests decided
	// on other daemons (NotifyPermission there).
	Permissions PermissionWaker
	// Tokens, if set before Run, hears of agent tokens revoked on other
	// daemons (RevokeToken there).
	Tokens TokenWaker

	listening atomic.Bool
	// Reconnects counts how often the listening connection was set up again
	// after it was lost; each time, every local waiter looked again.
	Reconnects atomic.Int64
}

// wire is a notification's payload.
type wire struct {
	Origin     string   `json:"o"`
	Workspace  string   `json:"w"`
	Recipients []string `json:"r,omitempty"`
	All        bool     `json:"a,omitempty"` // every inbox of the workspace
	Permission string   `json:"p,omitempty"` // a permission request was decided
	Token      string   `json:"t,omitempty"` // an agent token was revoked
}

var (
	_ hub.Notifications  = (*Notifier)(nil)
	_ hub.NotifyingStore = (*DB)(nil)
)

type note struct {
	payload string
	done    chan error
}

// wakePayload encodes a notification; one that would not fit wakes the whole
// workspace instead.
func wakePayload(w wire) string {
	b, _ := json.Marshal(w) // strings and bools only: it cannot fail
	if len(b) > maxPayload {
		w.Recipients, w.All = nil, true
		b, _ = json.Marshal(w)
	}
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
	return &Notifier{db: db, log: db.log, origin: db.origin, reqs: make(chan *note), stopped: make(chan struct{})}
}

// Notifications is NewNotifier for the daemon, which knows the store only as a
// hub.NotifyingStore.
func (db *DB) Notifications() hub.Notifications { return db.NewNotifier() }

// SetPermissions and SetTokens set Permissions and Tokens, for a caller that
// has the notifier as an interface: call them before Run.
func (n *Notifier) SetPermissions(w PermissionWaker) { n.Permissions = w }

func (n *Notifier) SetTokens(w TokenWaker) { n.Tokens = w }

// Notify tells the other daemons that the recipients' inboxes in ws have new
// messages. It returns once the notification is committed, so a send
// acknowledged to its client has its wake-up on the way. Notifies from
// concurrent sends share one statement.
func (n *Notifier) Notify(ctx context.Context, ws string, recipients []string) error {
	return n.send1(ctx, wire{Origin: n.origin, Workspace: ws, Recipients: recipients})
}

// NotifyPermission tells the other daemons that permission request id was
// decided, so that the one whose agent waits for it looks at the store.
func (n *Notifier) NotifyPermission(ctx context.Context, id string) error {
	return n.send1(ctx, wire{Origin: n.origin, Permission: id})
}

func (n *Notifier) send1(ctx context.Context, w wire) error {
	r := &note{payload: wakePayload(w), done: make(chan error, 1)}
	select {
	case n.reqs <- r:
	case <-n.stopped:
		return hub.Errorf("notify", hub.Unavailable, "the notifier has stopped")
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-r.done
}

// Listening reports whether the listening connection is up.
func (n *Notifier) Listening() bool { return n.listening.Load() }

// Run sends the notifications that Notify queues and listens for the other
// daemons' until ctx ends. When the listening connection is lost (PostgreSQL
// restarted, a network cut, pg_terminate_backend), it connects again with
// backoff and then wakes every local waiter, which looks at the store again:
// a notification missed meanwhile delays no message.
func (n *Notifier) Run(ctx context.Context, w Waker) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(n.stopped)
		n.send(ctx)
	}()
	n.listen(ctx, w)
	<-done
}

// send commits queued notifications, all that arrived during the previous
// commit in one statement.
func (n *Notifier) send(ctx context.Context) {
	var batch []*note
	for {
		select {
		case r := <-n.reqs:
			batch = append(batch[:0], r)
		case <-ctx.Done():
			return
		}
	gather:
		for {
			select {
			case r := <-n.reqs:
				batch = append(batch, r)
			default:
				break gather
			}
		}
		payloads := make([]string, len(batch))
		for i, r := range batch {
			payloads[i] = r.payload
		}
		// Not ctx: the senders are waiting for this outcome. A bound, so a
		// server that stopped answering does not hold the senders forever.
		// On the lazy pool: listeners hear a NOTIFY when its transaction
		// commits, before its WAL reaches disk, and a notification lost in
		// a power cut only delays a waiter until it looks again.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_, err := n.db.lazy.Exec(sctx, notify, channel, payloads)
		cancel()
		if err != nil {
			err = n.db.mapErr(ctx, "notify", err)
		}
		for _, r := range batch {
			r.done <- err
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
			n.log.Warn("listen for other daemons' wake-ups", "err", n.db.mapErr(ctx, "listen", err), "retry_in", backoff)
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
		// looks at the store again.
		w.WakeAll()
		if n.Permissions != nil {
			n.Permissions.WakeAll()
		}
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
			case msg.Permission != "":
				if n.Permissions != nil {
					n.Permissions.Wake(msg.Permission)
				}
			case msg.Token != "":
				if n.Tokens != nil {
					n.Tokens.Revoked(msg.Token)
				}
			case msg.All:
				w.WakeAll()
			default:
				w.Wake(msg.Workspace, msg.Recipients)
			}
		}
		n.listening.Store(false)
		conn.Close(context.Background())
	}
}
