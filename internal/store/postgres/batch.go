package postgres

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/parley-dev/parley/internal/hub"
)

// Batching of hot calls. Under load, what a send costs PostgreSQL is mostly
// per statement, not per row: waking a backend, a round trip, a commit and
// its WAL flush. With 64 concurrent senders, one statement each spent the
// server's time on that overhead. A batcher hands the calls that arrive while
// its workers are busy to the next free worker, which serves them all in one
// statement. A lone call goes at once, so an idle daemon pays nothing.

// maxBatch bounds the calls of one statement.
const maxBatch = 256

// batcher gathers concurrent calls (*T, each with its own way to answer) into
// batches and runs them on a few workers.
type batcher[T any] struct {
	queue chan *T // unbuffered: a call is handed to a worker that is ready
	quit  chan struct{}
	wg    sync.WaitGroup
	run   func([]*T) // serves a batch and answers each of its calls
	// shared counts the batches of more than one call; batches and calls
	// count all batches and the calls they served.
	shared, batches, calls atomic.Int64
}

// start runs workers that serve batches with run.
func (b *batcher[T]) start(workers int, run func([]*T)) {
	b.queue, b.quit, b.run = make(chan *T), make(chan struct{}), run
	for range workers {
		b.wg.Go(b.work)
	}
}

// stop ends the workers once their batches are done.
func (b *batcher[T]) stop() {
	close(b.quit)
	b.wg.Wait()
}

// submit hands p to a worker; the caller then waits for p's answer. It fails
// only when ctx ends or the store closes first: then p was not handed over.
func (b *batcher[T]) submit(ctx context.Context, db *DB, op string, p *T) error {
	if err := ctx.Err(); err != nil { // a ready worker must not win the select below
		return db.mapErr(ctx, op, err)
	}
	select {
	case b.queue <- p:
		return nil
	case <-b.quit:
		return hub.Errorf(op, hub.Unavailable, "the store is closed")
	case <-ctx.Done():
		return db.mapErr(ctx, op, ctx.Err())
	}
}

func (b *batcher[T]) work() {
	batch := make([]*T, 0, maxBatch)
	for {
		select {
		case p := <-b.queue:
			batch = append(batch[:0], p)
		case <-b.quit:
			return
		}
	gather:
		for len(batch) < maxBatch {
			select {
			case p := <-b.queue:
				batch = append(batch, p)
			default:
				break gather
			}
		}
		if len(batch) > 1 {
			b.shared.Add(1)
		}
		b.batches.Add(1)
		b.calls.Add(int64(len(batch)))
		b.run(batch)
		clear(batch) // drop the served calls
	}
}
