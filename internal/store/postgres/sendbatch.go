package postgres

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// Group commit of sends. Each durable commit waits for PostgreSQL to flush
// its WAL, and each send was one round trip and one flush of its own: with
// 64 senders the server spent its time waking backends and flushing. Sends
// that arrive while a batch commits now wait for the next one, and each batch
// is one statement and one flush. A lone send still goes at once.

// committers is how many batches may commit at once: while one waits for
// its flush, the next gathers and sends.
const committers = 4

// maxBatch bounds the messages of one statement.
const maxBatch = 256

// sendTimeout bounds a batch's commit: the senders of a batch wait for it
// whatever their own contexts say, so that a send is never reported failed
// after it was stored, nor stored without its wake-up.
const sendTimeout = 15 * time.Second

// pendingSend is one CreateMessage waiting for its batch.
type pendingSend struct {
	m          *hub.Message
	recipients []string
	metadata   any // the JSON text, or nil
	done       chan error
}

// sendBatcher gathers concurrent sends into batches.
type sendBatcher struct {
	db    *DB
	queue chan *pendingSend // unbuffered: a send is handed to a running committer
	quit  chan struct{}
	wg    sync.WaitGroup
	// batches counts the statements that stored several messages.
	batches atomic.Int64
}

func (b *sendBatcher) start(db *DB) {
	b.db, b.queue, b.quit = db, make(chan *pendingSend), make(chan struct{})
	for range committers {
		b.wg.Go(b.run)
	}
}

// stop ends the committers once their batches are done.
func (b *sendBatcher) stop() {
	close(b.quit)
	b.wg.Wait()
}

// add queues p and returns once its batch committed or failed.
func (b *sendBatcher) add(ctx context.Context, p *pendingSend) error {
	const op = "create message"
	if err := ctx.Err(); err != nil { // a ready committer must not win the select below
		return b.db.mapErr(ctx, op, err)
	}
	p.done = make(chan error, 1)
	select {
	case b.queue <- p:
	case <-b.quit:
		return hub.Errorf(op, hub.Unavailable, "the store is closed")
	case <-ctx.Done():
		return b.db.mapErr(ctx, op, ctx.Err())
	}
	return <-p.done
}

func (b *sendBatcher) run() {
	batch := make([]*pendingSend, 0, maxBatch)
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
		b.commit(batch)
	}
}

// commit stores a batch. When it fails for a reason other than the server
// (a duplicate id, say), each message is tried alone, so that only the bad
// one fails.
func (b *sendBatcher) commit(batch []*pendingSend) {
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	if len(batch) == 1 {
		batch[0].done <- b.db.createOne(ctx, batch[0])
		return
	}
	b.batches.Add(1)
	err := b.db.createMany(ctx, batch)
	if err != nil && hub.KindOf(err) != hub.Unavailable {
		for _, p := range batch {
			p.done <- b.db.createOne(ctx, p)
		}
		return
	}
	for _, p := range batch {
		p.done <- err
	}
}

// createMessages is createMessage for many messages, in their order, as
// parallel arrays: the messages' columns, then the deliveries' (message id,
// recipient, rank).
const createMessages = `WITH ws AS (
		INSERT INTO workspaces (name) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING
	), m AS (
		INSERT INTO messages (id, workspace, sender, to_addr, content, payload, priority,
			reply_to, thread_id, metadata, created_at, ack_required, ack_deadline)
		SELECT id, ws, sender, to_addr, content, payload::json, priority,
			reply_to, thread_id, metadata::jsonb, created_at, ack_required, ack_deadline
		FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
			$9::text[], $10::text[], $11::text[], $12::timestamptz[], $13::bool[], $14::timestamptz[])
			WITH ORDINALITY AS t(id, ws, sender, to_addr, content, payload, priority,
				reply_to, thread_id, metadata, created_at, ack_required, ack_deadline, n)
		ORDER BY n
		RETURNING id, seq, workspace
	)
	INSERT INTO deliveries (workspace, recipient, message_seq, rank)
	SELECT m.workspace, d.name, m.seq, d.rank
	FROM unnest($15::text[], $16::text[], $17::smallint[]) WITH ORDINALITY AS d(id, name, rank, n)
	JOIN m ON m.id = d.id
	ORDER BY m.seq, d.n
	ON CONFLICT DO NOTHING`

// createMany stores the batch's messages and deliveries in one statement.
func (db *DB) createMany(ctx context.Context, batch []*pendingSend) error {
	const op = "create messages"
	n := len(batch)
	var (
		newWS                                            []string
		ids, wss, senders, tos, contents, prios, replies = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		threads                                          = make([]string, n)
		payloads, metadata                               = make([]*string, n), make([]*string, n)
		created, ackDue                                  = make([]time.Time, n), make([]*time.Time, n)
		ackReq                                           = make([]bool, n)
		dIDs, dNames                                     []string
		dRanks                                           []int16
	)
	for i, p := range batch {
		m := p.m
		if _, ok := db.known.Load(m.Workspace); !ok && !slices.Contains(newWS, m.Workspace) {
			newWS = append(newWS, m.Workspace)
		}
		ids[i], wss[i], senders[i], tos[i], contents[i] = m.ID, m.Workspace, m.From, m.To, m.Content
		prios[i], replies[i], threads[i], created[i], ackReq[i] = string(m.Priority), m.ReplyTo, m.ThreadID, m.CreatedAt, m.AckRequired
		if m.Payload != nil {
			s := string(m.Payload)
			payloads[i] = &s
		}
		if md, ok := p.metadata.(string); ok {
			metadata[i] = &md
		}
		if !m.AckDeadline.IsZero() {
			t := m.AckDeadline
			ackDue[i] = &t
		}
		for _, r := range p.recipients {
			dIDs, dNames, dRanks = append(dIDs, m.ID), append(dNames, r), append(dRanks, int16(m.Priority.Rank()))
		}
	}
	if newWS == nil {
		newWS = []string{}
	}
	if dIDs == nil {
		dIDs, dNames, dRanks = []string{}, []string{}, []int16{}
	}
	_, err := db.pool.Exec(ctx, createMessages, newWS, ids, wss, senders, tos, contents, payloads, prios,
		replies, threads, metadata, created, ackReq, ackDue, dIDs, dNames, dRanks)
	if err != nil {
		return db.mapErr(ctx, op, err)
	}
	for _, ws := range newWS {
		db.markKnown(ws)
	}
	return nil
}
