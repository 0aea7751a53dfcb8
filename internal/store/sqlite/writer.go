package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"
)

// errClosed is returned by writes after Close.
var errClosed = errors.New("store is closed")

// maxBatch bounds how many writes share one transaction, so that one commit never
// holds a long queue of callers hostage to a single large write set.
const maxBatch = 128

// Search indexing is owed, not paid, by the transaction that stores a
// message: it queues the message in search_pending (migration 9), and the
// writer indexes the queue in a transaction of its own once no write has come
// for indexIdle, or at once when indexBatch messages are owed, so that a
// storm of sends still indexes in batches (cheaper per message than one per
// commit). Indexing inside every send's commit cost each send->wake-up
// 113-180 µs. The idle wait is longer than the gaps inside one exchange
// (a send, the wake-up it causes, the reader's next request and a reply
// sent at once): at 1 ms, indexing landed in the middle of exchanges and
// cost each send about 100 µs of waiting for the writer. A search pays what
// is owed before it reads, so the wait never hides a message from search.
const (
	indexIdle  = 10 * time.Millisecond
	indexBatch = 32
)

// A writeReq is one write waiting for the writer goroutine.
type writeReq struct {
	ctx  context.Context
	fn   func(ctx context.Context, c *sql.Conn) error
	done chan error // buffered: the writer never blocks on a caller
	lazy bool       // may skip the fsync: see DB.writeLazy
	// index marks the writer's own write that pays the search debt; it is
	// lazy (a lost one leaves the messages queued, to be indexed again) and
	// not counted among the writes.
	index bool
}

// mayOwe reports whether r can change how many messages search is owed:
// lazy writes never store messages (see DB.writeLazy).
func (r *writeReq) mayOwe() bool { return !r.lazy || r.index }

// writer owns the one writer connection. Every write runs on its goroutine, and
// writes that arrive while a commit is under way are committed together: with
// synchronous=FULL the fsync dominates a write, so eight agents sending at once
// pay for about one fsync instead of eight. Each write still happens whole or not
// at all, inside a savepoint of its own.
type writer struct {
	conn    *sql.Conn
	reqs    chan *writeReq // unbuffered: a send succeeds only while run listens
	closing chan struct{}
	stopped chan struct{}

	// syncMode is the connection's PRAGMA synchronous, restored after a
	// batch of lazy writes committed without a sync.
	syncMode string

	// The transaction control statements, prepared once: parsing one anew
	// cost about 13 µs, and a send and its wake-up run six of them.
	begin, commitTx, rollback, savepoint, release, rollbackTo, syncNormal, syncFull *sql.Stmt

	// debt counts the messages owed to search (DB.searchDebt); it runs
	// last in every transaction that may change that number, so that owed
	// is exact as of each commit. index pays them all (DB.indexPending).
	debt  func() (int64, error)
	index func(ctx context.Context, c *sql.Conn) error
	owed  atomic.Int64 // messages owed to search as of the last commit

	commits atomic.Int64 // transactions of callers' writes committed, for tests and benchmarks
	writes  atomic.Int64 // callers' writes committed
}

func newWriter(conn *sql.Conn, syncMode string, debt func() (int64, error), index func(ctx context.Context, c *sql.Conn) error) (*writer, error) {
	w := &writer{
		conn:     conn,
		syncMode: syncMode,
		debt:     debt,
		index:    index,
		reqs:     make(chan *writeReq),
		closing:  make(chan struct{}),
		stopped:  make(chan struct{}),
	}
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{
		{&w.begin, "BEGIN IMMEDIATE"},
		{&w.commitTx, "COMMIT"},
		{&w.rollback, "ROLLBACK"},
		{&w.savepoint, "SAVEPOINT w"},
		{&w.release, "RELEASE w"},
		{&w.rollbackTo, "ROLLBACK TO w"},
		{&w.syncNormal, "PRAGMA synchronous=NORMAL"},
		{&w.syncFull, "PRAGMA synchronous=FULL"},
	} {
		st, err := conn.PrepareContext(context.Background(), p.sql)
		if err != nil {
			w.closeStmts()
			return nil, fmt.Errorf("prepare %s: %w", p.sql, err)
		}
		*p.dst = st
	}
	// What a crash left owed (its indexing transaction is lazy).
	n, err := debt()
	if err != nil {
		w.closeStmts()
		return nil, fmt.Errorf("count messages owed to search: %w", err)
	}
	w.owed.Store(n)
	go w.run()
	return w, nil
}

func (w *writer) closeStmts() {
	for _, st := range []*sql.Stmt{w.begin, w.commitTx, w.rollback, w.savepoint, w.release, w.rollbackTo, w.syncNormal, w.syncFull} {
		if st != nil {
			st.Close()
		}
	}
}

// do runs fn in a write transaction and returns once that transaction committed
// (or fn's error, with nothing of fn kept). fn must use only c and the writer's
// prepared statements, and must not keep rows open when it returns. fn may run
// more than once (when a write it shared a transaction with broke that
// transaction), so it must reset whatever it reports. The ctx given
// to fn is never cancelled: cancelling a statement half-way through would roll
// back the whole shared transaction, so cancellation is honoured up to the moment
// fn starts.
func (w *writer) do(ctx context.Context, lazy bool, fn func(ctx context.Context, c *sql.Conn) error) error {
	return w.send(&writeReq{ctx: ctx, fn: fn, done: make(chan error, 1), lazy: lazy})
}

// payDebt indexes for search every message owed as of the last commit, and
// returns at once if none is (see DB.Search for the guarantee).
func (w *writer) payDebt(ctx context.Context) error {
	if w.owed.Load() == 0 {
		return nil
	}
	return w.send(&writeReq{ctx: ctx, fn: w.index, done: make(chan error, 1), lazy: true, index: true})
}

// send hands r to the writer goroutine and waits for its outcome.
func (w *writer) send(r *writeReq) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	select {
	case w.reqs <- r:
	case <-w.closing:
		return errClosed
	case <-r.ctx.Done():
		return r.ctx.Err()
	}
	// Once handed over, wait for the outcome even if ctx ends: the write may
	// already be committed, and the caller must not be told otherwise.
	return <-r.done
}

func (w *writer) close() {
	close(w.closing)
	<-w.stopped
	w.closeStmts()
}

func (w *writer) run() {
	defer close(w.stopped)
	batch := make([]*writeReq, 0, maxBatch)
	// idle runs while something is owed to search and no write has come
	// since the last commit. A failed indexing does not re-arm it: it is
	// tried again after the next write, not in a loop.
	idle := time.NewTimer(indexIdle)
	idle.Stop()
	for {
		select {
		case r := <-w.reqs:
			idle.Stop()
			batch = append(batch[:0], r)
		case <-idle.C:
			w.indexOwed()
			continue
		case <-w.closing:
			w.indexOwed()
			return
		}
	gather:
		for len(batch) < maxBatch {
			select {
			case r := <-w.reqs:
				batch = append(batch, r)
			default:
				break gather
			}
		}
		w.commit(batch)
		clear(batch)
		if w.owed.Load() >= indexBatch {
			w.indexOwed()
		}
		if w.owed.Load() > 0 {
			idle.Reset(indexIdle)
		}
	}
}

// indexOwed pays the search debt on the writer's goroutine, in a transaction
// of its own. A failure leaves the messages queued; the next search reports
// it.
func (w *writer) indexOwed() {
	if w.owed.Load() == 0 {
		return
	}
	w.commit([]*writeReq{{ctx: context.Background(), fn: w.index, done: make(chan error, 1), lazy: true, index: true}})
}

// commit runs the batch in one transaction and tells every caller its outcome,
// exactly once.
func (w *writer) commit(batch []*writeReq) {
	// A batch of only lazy writes commits without syncing the log (WAL with
	// synchronous=NORMAL): the commit still survives the process dying, and
	// the next durable commit syncs it to disk along with its own.
	lazy := !slices.ContainsFunc(batch, func(r *writeReq) bool { return !r.lazy })
	if w.syncMode == "FULL" && lazy {
		if w.exec(w.syncNormal) == nil {
			defer w.exec(w.syncFull)
		}
	}
	if len(batch) == 1 {
		w.commitOne(batch[0])
		return
	}
	if err := w.exec(w.begin); err != nil {
		for _, r := range batch {
			r.done <- err
		}
		return
	}
	ok := make([]*writeReq, 0, len(batch))
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- err
			continue
		}
		if err := w.exec(w.savepoint); err != nil {
			w.rollbackAndRetry(append(ok, batch[i:]...))
			return
		}
		if err := r.fn(context.WithoutCancel(r.ctx), w.conn); err != nil {
			r.done <- err
			// Some errors (SQLITE_FULL, I/O errors) make SQLite roll back the
			// whole transaction; then the savepoint is gone, and so are the
			// writes before this one, through no fault of theirs.
			if w.exec(w.rollbackTo) != nil || w.exec(w.release) != nil {
				w.rollbackAndRetry(append(ok, batch[i+1:]...))
				return
			}
			continue
		}
		if err := w.exec(w.release); err != nil {
			w.rollbackAndRetry(append(ok, batch[i:]...))
			return
		}
		ok = append(ok, r)
	}
	if len(ok) == 0 {
		w.exec(w.rollback)
		return
	}
	owed, err := w.finish(ok)
	if err != nil {
		w.rollbackAndRetry(ok)
		return
	}
	if err := w.exec(w.commitTx); err != nil {
		w.exec(w.rollback) // may fail: SQLite may have rolled back already
		for _, r := range ok {
			r.done <- err
		}
		return
	}
	w.committed(ok, owed)
	for _, r := range ok {
		r.done <- nil
	}
}

// rollbackAndRetry ends a transaction that can no longer commit and runs each of
// rs again in a transaction of its own.
func (w *writer) rollbackAndRetry(rs []*writeReq) {
	w.exec(w.rollback) // may fail: SQLite may have rolled back already
	for _, r := range rs {
		w.commitOne(r)
	}
}

// commitOne runs one write in its own transaction.
func (w *writer) commitOne(r *writeReq) {
	if err := r.ctx.Err(); err != nil {
		r.done <- err
		return
	}
	if err := w.exec(w.begin); err != nil {
		r.done <- err
		return
	}
	if err := r.fn(context.WithoutCancel(r.ctx), w.conn); err != nil {
		w.exec(w.rollback)
		r.done <- err
		return
	}
	rs := []*writeReq{r}
	owed, err := w.finish(rs)
	if err != nil {
		w.exec(w.rollback)
		r.done <- err
		return
	}
	if err := w.exec(w.commitTx); err != nil {
		w.exec(w.rollback)
		r.done <- err
		return
	}
	w.committed(rs, owed)
	r.done <- nil
}

// finish runs last in a transaction of the writes rs: it counts the
// messages owed to search, unless no write of rs may change that count (a
// wake-up's hand-out, lazy, skips the look). It returns -1 when it did not
// look.
func (w *writer) finish(rs []*writeReq) (owed int64, err error) {
	if !slices.ContainsFunc(rs, (*writeReq).mayOwe) {
		return -1, nil
	}
	return w.debt()
}

// committed records the commit of the writes rs, after which owed messages
// (-1: as many as before) are owed to search. It runs before any caller of
// rs is told: a caller that sees its send committed, then searches, must
// find the debt.
func (w *writer) committed(rs []*writeReq, owed int64) {
	if owed >= 0 {
		w.owed.Store(owed)
	}
	n := int64(0)
	for _, r := range rs {
		if !r.index {
			n++
		}
	}
	if n > 0 {
		w.commits.Add(1)
		w.writes.Add(n)
	}
}

func (w *writer) exec(st *sql.Stmt) error {
	_, err := st.ExecContext(context.Background())
	return err
}
