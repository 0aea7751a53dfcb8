package postgres

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parley-dev/parley/internal/hub"
)

// Sends. Under load a send's cost is mostly per statement, not per row:
// waking a backend, parsing, a commit and its WAL flush, and the wake-ups of
// the daemons that listen. A send is one round trip for its batch (batch.go):
// one implicit transaction, with one WAL flush, that stores the messages and
// their deliveries, reads the recipients' agent records (the presence the hub
// reports) and notifies the other daemons. The notifications go out when it
// commits, so a daemon that dies after the commit still woke the others.
//
// PostgreSQL serialises the commits of transactions that NOTIFY under one
// lock held across their WAL flush, so notifying batches could not share
// flushes anyway; and a batch's fixed cost (measured at about 1.4 ms of
// server CPU at load 20, against about 60 µs per message) dwarfs its
// per-message cost. So one committer: while it commits, the sends that arrive
// queue up and go as the next batch, which grows with the load. With four,
// 64 senders made batches of 8 and cost twice the CPU per message.
//
// The price of notifying in the send's transaction: if PostgreSQL's
// notification queue filled up (8 GB behind a listener that stopped reading
// without closing its connection), sends would fail until it drains, where
// before they succeeded without waking the other daemons.

// committers is how many batches of sends commit at once.
const committers = 1

// sendTimeout bounds a batch's commit: the senders of a batch wait for it
// whatever their own contexts say, so that a send is never reported failed
// after it was stored, nor stored without its wake-up.
const sendTimeout = 15 * time.Second

// pendingSend is one send waiting for its batch.
type pendingSend struct {
	m          *hub.Message
	recipients []string
	handed     []hub.Handoff
	metadata   any  // the JSON text, or nil
	read       bool // read the recipients' agents (SendMessage)

	agents []*hub.Agent // the recipients' agents that exist, once done
	done   chan error   // buffered: the committer never waits for the sender
}

var _ hub.SendStore = (*DB)(nil)

// notify sends notifications ($2) on channel $1, one statement for many,
// and keeps each in relay_events, whose seq starts its payload: a daemon
// that was not listening catches up from the table (notify.go).
const notify = `WITH e AS (
	INSERT INTO relay_events (payload) SELECT p FROM unnest($2::text[]) WITH ORDINALITY AS u(p, i) ORDER BY i
	RETURNING seq, payload
)
SELECT pg_notify($1, seq::text || ' ' || payload) FROM (SELECT seq, payload FROM e ORDER BY seq) s`

// SendMessage stores m like CreateMessage and returns the recipients' agents
// (those that exist) as read in the same round trip (hub.SendStore). Like
// CreateMessage, it tells the other daemons on the database of the message
// when it commits.
func (db *DB) SendMessage(ctx context.Context, m *hub.Message, recipients []string, handed ...hub.Handoff) ([]*hub.Agent, error) {
	p, err := db.newSend(m, recipients, handed)
	if err != nil {
		return nil, err
	}
	p.read = true
	if err := db.send(ctx, p); err != nil {
		return nil, err
	}
	return p.agents, nil
}

// send queues p and returns once its batch committed or failed.
func (db *DB) send(ctx context.Context, p *pendingSend) error {
	p.done = make(chan error, 1)
	if err := db.sends.submit(ctx, db, "create message", p); err != nil {
		return err
	}
	return <-p.done
}

// commitSends stores a batch. When it fails for a reason other than the
// server (a duplicate id, say), each message is tried alone, so that only
// the bad one fails.
func (db *DB) commitSends(batch []*pendingSend) {
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	err := db.commit(ctx, batch)
	if err != nil && len(batch) > 1 && hub.KindOf(err) != hub.Unavailable {
		for _, p := range batch {
			p.done <- db.commit(ctx, []*pendingSend{p})
		}
		return
	}
	for _, p := range batch {
		p.done <- err
	}
}

// commit stores batch in one round trip: the insert, the agent reads and the
// notifications pipelined in one implicit transaction.
func (db *DB) commit(ctx context.Context, batch []*pendingSend) error {
	const op = "create message"
	var b pgx.Batch
	newWS := db.queueInsert(&b, batch)
	handOut := db.queueHandOut(&b, batch)
	idx, wss, names := []int32{}, []string{}, []string{}
	for i, p := range batch {
		if p.read {
			for _, r := range p.recipients {
				idx, wss, names = append(idx, int32(i)), append(wss, p.m.Workspace), append(names, r)
			}
		}
	}
	read := len(idx) > 0
	if read {
		b.Queue(`SELECT k.i, `+agentCols+` FROM unnest($1::int[], $2::text[], $3::text[]) AS k(i, kws, kname)
			JOIN agents ON workspace = k.kws AND name = k.kname`, idx, wss, names)
	}
	b.Queue(notify, channel, db.sendEventPayloads(batch))
	res := db.pool.SendBatch(ctx, &b)
	_, err := res.Exec()
	if err == nil && handOut {
		_, err = res.Exec()
	}
	if err == nil && read {
		var rows pgx.Rows
		if rows, err = res.Query(); err == nil {
			for rows.Next() {
				var i int32
				var a *hub.Agent
				if a, err = scanAgent(rows, &i); err != nil {
					break
				}
				batch[i].agents = append(batch[i].agents, a)
			}
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
		}
	}
	if err == nil {
		_, err = res.Exec() // the notifications
	}
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		for _, p := range batch {
			p.agents = nil
		}
		err = db.mapErr(ctx, op, err)
		if len(batch) == 1 && hub.KindOf(err) == hub.Conflict {
			return hub.Errorf(op, hub.Conflict, "message %s exists already", batch[0].m.ID)
		}
		return err
	}
	for _, ws := range newWS {
		db.markKnown(ws)
	}
	return nil
}

// handOut writes the copies that sends hand straight to a waiting reader
// (hub.Handoff) as Take would have handed them out, after the insert in the
// same implicit transaction.
const handOut = `UPDATE deliveries d SET reader = h.reader, lease_until = h.lease_until, delivered_at = h.at,
		delivery_count = 1, read_at = h.read_at, woke_via = h.via,
		woke_at = CASE WHEN h.via <> '' THEN h.at END,
		lease_node = CASE WHEN h.reader IS NULL THEN NULL ELSE $8 END
	FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::timestamptz[], $7::text[])
		AS h(id, recipient, reader, lease_until, at, read_at, via)
	JOIN messages m ON m.id = h.id
	WHERE d.message_seq = m.seq AND d.recipient = h.recipient`

// queueHandOut queues handOut for the batch's handed copies, if it has any,
// and says whether it did.
func (db *DB) queueHandOut(b *pgx.Batch, batch []*pendingSend) bool {
	var (
		ids, recipients, vias []string
		readers               []*string // NULL: read at once
		leases, ats, readAts  []*time.Time
	)
	for _, p := range batch {
		for _, o := range p.handed {
			at := o.Now
			ids, recipients, vias, ats = append(ids, p.m.ID), append(recipients, o.Recipient), append(vias, string(o.Via)), append(ats, &at)
			if o.Reader == "" {
				readers, leases, readAts = append(readers, nil), append(leases, nil), append(readAts, &at)
			} else {
				reader, lease := o.Reader, o.LeaseUntil
				readers, leases, readAts = append(readers, &reader), append(leases, &lease), append(readAts, nil)
			}
		}
	}
	if len(ids) == 0 {
		return false
	}
	b.Queue(handOut, ids, recipients, readers, leases, ats, readAts, vias, db.node)
	return true
}

// createMessages stores messages, in their order, with their deliveries, in
// one statement. Its arguments are parallel arrays: the messages' columns,
// then the deliveries' (message id, recipient, rank). The recipients of a
// message are distinct (newSend), so the deliveries insert without
// ON CONFLICT, whose speculative insertion probed the unique index before
// each row. createMessagesWS also records new workspaces ($24); most
// batches have none and skip that insert and its setup.
const createMessages = `WITH ` + messagesCTE + deliveriesInsert

const createMessagesWS = `WITH ws AS (
		INSERT INTO workspaces (name) SELECT unnest($24::text[]) ON CONFLICT DO NOTHING
	), ` + messagesCTE + deliveriesInsert

const messagesCTE = `m AS (
		INSERT INTO messages (id, workspace, sender, to_addr, content, payload, priority,
			reply_to, thread_id, metadata, created_at, ack_required, ack_deadline,
			sender_role, origin_host, origin_door, task_of, idem_key, expires_at, deliver)
		SELECT id, ws, sender, to_addr, content, payload::json, priority,
			reply_to, thread_id, metadata::jsonb, created_at, ack_required, ack_deadline,
			sender_role, origin_host, origin_door, task_of, idem_key, expires_at, deliver
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::text[], $9::text[], $10::text[], $11::timestamptz[], $12::bool[], $13::timestamptz[],
			$17::text[], $18::text[], $19::text[], $20::text[], $21::text[], $22::timestamptz[], $23::text[])
			WITH ORDINALITY AS t(id, ws, sender, to_addr, content, payload, priority,
				reply_to, thread_id, metadata, created_at, ack_required, ack_deadline,
				sender_role, origin_host, origin_door, task_of, idem_key, expires_at, deliver, n)
		ORDER BY n
		RETURNING id, seq, workspace
	)`

const deliveriesInsert = `
	INSERT INTO deliveries (workspace, recipient, message_seq, rank)
	SELECT m.workspace, d.name, m.seq, d.rank
	FROM unnest($14::text[], $15::text[], $16::smallint[]) WITH ORDINALITY AS d(id, name, rank, n)
	JOIN m ON m.id = d.id
	ORDER BY m.seq, d.n`

// queueInsert queues the insert of the batch's messages and deliveries, one
// statement, and returns the workspaces it records for the first time.
func (db *DB) queueInsert(b *pgx.Batch, batch []*pendingSend) (newWS []string) {
	n := len(batch)
	var (
		ids, wss, senders, tos, contents, prios, replies = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		threads                                          = make([]string, n)
		payloads, metadata                               = make([]*string, n), make([]*string, n)
		created, ackDue, expires                         = make([]time.Time, n), make([]*time.Time, n), make([]*time.Time, n)
		delivers                                         = make([]string, n)
		ackReq                                           = make([]bool, n)
		roles, hosts, doors, tasks                       = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		keys                                             = make([]*string, n)
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
		roles[i], hosts[i], doors[i], tasks[i] = m.Origin.Role, m.Origin.Host, string(m.Origin.Door), m.Origin.Task
		if m.IdempotencyKey != "" {
			k := m.IdempotencyKey
			keys[i] = &k
		}
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
		if !m.ExpiresAt.IsZero() {
			t := m.ExpiresAt
			expires[i] = &t
		}
		delivers[i] = string(m.Deliver)
		for _, r := range p.recipients {
			dIDs, dNames, dRanks = append(dIDs, m.ID), append(dNames, r), append(dRanks, int16(m.Priority.Rank()))
		}
	}
	if dIDs == nil {
		dIDs, dNames, dRanks = []string{}, []string{}, []int16{}
	}
	args := []any{ids, wss, senders, tos, contents, payloads, prios,
		replies, threads, metadata, created, ackReq, ackDue, dIDs, dNames, dRanks, roles, hosts, doors, tasks, keys, expires, delivers}
	if len(newWS) > 0 {
		b.Queue(createMessagesWS, append(args, newWS)...)
	} else {
		b.Queue(createMessages, args...)
	}
	return newWS
}
