package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// msgCols are a message's columns as scanMessage reads them, for a messages table
// aliased m.
const msgCols = `m.id, m.workspace, m.sender, m.to_addr, m.content, m.payload, m.priority,
	m.reply_to, m.thread_id, m.metadata, m.created_at, m.ack_required, m.ack_deadline,
	m.sender_role, m.origin_host, m.origin_door, m.task_of, m.expires_at, m.deliver`

// inboxFrom selects recipient's inbox deliveries in inbox order, of thread ?5
// and stored after message ?6 if they are not empty. It repeats the partial index's condition so that SQLite
// uses that index.
const inboxFrom = `FROM deliveries d JOIN messages m ON m.seq = d.message_seq
	WHERE ` + inboxWhere + `
	ORDER BY d.rank, d.id LIMIT ?4`

const inboxWhere = `d.workspace = ?1 AND d.recipient = ?2 AND d.read_at IS NULL AND d.reader IS NULL
	AND d.rank <= ?3 AND (?5 = '' OR m.thread_id = ?5)
	AND (?6 = '' OR m.seq > (SELECT seq FROM messages WHERE id = ?6))`

// takeFrom is inboxFrom for a take, which may also narrow it to replies: sent
// by one of the repliers ?7 (a JSON list; NULL: anyone), or the result of the
// task ?8 (hub.TakeQuery.Repliers).
const takeFrom = `FROM deliveries d JOIN messages m ON m.seq = d.message_seq
	WHERE ` + inboxWhere + `
	AND (?7 IS NULL OR m.sender IN (SELECT value FROM json_each(?7)) OR (?8 != '' AND m.task_of = ?8))
	ORDER BY d.rank, d.id LIMIT ?4`

// statements are the hot paths' prepared statements: w* on the writer, r* on the
// read pool.
type statements struct {
	wInsMessage    *sql.Stmt
	wInsDelivery   *sql.Stmt
	wInsDeliveries *sql.Stmt
	wInsHanded     *sql.Stmt
	wHandOut       *sql.Stmt
	wInsWorkspace  *sql.Stmt
	wTakeSel       *sql.Stmt
	wTakeUpd       *sql.Stmt
	wConfirm       *sql.Stmt
	wTouch         *sql.Stmt
	rUnread        *sql.Stmt
	rUnreadBy      *sql.Stmt
	rPeek          *sql.Stmt
	rMessage       *sql.Stmt
	rAgent         *sql.Stmt
	rAgents        *sql.Stmt
	// Reservations (reservations.go): prepared, they cost a reserve half
	// what they did.
	wResExpire, wResLive, wResDelete, wResPut, rResLive *sql.Stmt
	// Search indexing of the messages queued in search_pending (migration
	// 9), one statement per index for all that are owed.
	wIndexOwed, wIndexFTS, wIndexWords, wIndexDone *sql.Stmt
}

// preparer is what *sql.Conn (the writer) and *sql.DB (the read pool) share.
type preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

func (s *statements) prepare(ctx context.Context, w *sql.Conn, r *sql.DB) error {
	for _, p := range []struct {
		dst *(*sql.Stmt)
		db  preparer
		sql string
	}{
		{&s.wInsMessage, w, `INSERT INTO messages (id, workspace, sender, to_addr, content, payload,
			priority, reply_to, thread_id, metadata, created_at, ack_required, ack_deadline,
			sender_role, origin_host, origin_door, task_of, idem_key, expires_at, deliver, expiry_reported)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&s.wInsDelivery, w, `INSERT OR IGNORE INTO deliveries (workspace, recipient, message_seq, rank)
			VALUES (?, ?, ?, ?)`},
		// One statement for any number of recipients: a broadcast to a thousand
		// agents is one statement in one transaction, not a thousand round trips.
		{&s.wInsDeliveries, w, `INSERT OR IGNORE INTO deliveries (workspace, recipient, message_seq, rank)
			SELECT ?1, value, ?2, ?3 FROM json_each(?4) ORDER BY key`},
		// A copy handed straight to a waiting reader (hub.Handoff): as
		// wTakeUpd would leave it, never in the inbox.
		{&s.wInsHanded, w, `INSERT OR IGNORE INTO deliveries (workspace, recipient, message_seq, rank,
			reader, lease_until, delivered_at, delivery_count, read_at, woke_via, woke_at)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, ?8, ?9, CASE WHEN ?9 != '' THEN ?7 ELSE 0 END)`},
		{&s.wHandOut, w, `UPDATE deliveries SET reader = ?3, lease_until = ?4, delivered_at = ?5,
			delivery_count = 1, read_at = ?6, woke_via = ?7, woke_at = CASE WHEN ?7 != '' THEN ?5 ELSE 0 END
			WHERE message_seq = ?1 AND recipient = ?2`},
		{&s.wInsWorkspace, w, `INSERT OR IGNORE INTO workspaces (name) VALUES (?)`},
		{&s.wTakeSel, w, `SELECT d.id, ` + delCols + `, ` + msgCols + ` ` + takeFrom},
		// Hands out exactly the rows wTakeSel returned, by rowid.
		// The first path that reaches the recipient stays its wake path.
		{&s.wTakeUpd, w, `UPDATE deliveries SET reader = ?1, lease_until = ?2, delivered_at = ?3,
			delivery_count = delivery_count + 1, read_at = ?4,
			woke_via = CASE WHEN woke_via = '' THEN ?6 ELSE woke_via END,
			woke_at = CASE WHEN woke_via = '' AND ?6 != '' THEN ?3 ELSE woke_at END
			WHERE id IN (SELECT value FROM json_each(?5))`},
		// Confirmation (deliveries.go): the reader's leases (of the messages
		// in ?2, or all if NULL) handed out no later than ?3 become read, in
		// one prepared statement that rides each hand-out cheaply. It
		// returns what scanDelivery reads, after the update.
		{&s.wConfirm, w, `UPDATE deliveries SET read_at = ?3, reader = NULL, lease_until = 0
			WHERE reader = ?1 AND delivered_at <= ?3
			AND (?2 IS NULL OR message_seq IN (SELECT seq FROM messages WHERE id IN (SELECT value FROM json_each(?2))))
			RETURNING id, workspace, recipient, (SELECT id FROM messages WHERE seq = message_seq), reader, lease_until,
				delivered_at, delivery_count, read_at, acked_at, woke_via, woke_at, seen_at, bounced_at, bounce_reason,
				letter, door_state, door_note, door_at, door_until`},
		{&s.wTouch, w, `UPDATE agents SET last_seen = ? WHERE workspace = ? AND name = ?`},
		{&s.wIndexOwed, w, `SELECT count(*) FROM search_pending`},
		{&s.wIndexFTS, w, `INSERT INTO messages_fts (rowid, content, payload, metadata)
			SELECT s.seq, s.content, s.payload, s.metadata FROM search_pending p JOIN messages_search s ON s.seq = p.seq`},
		{&s.wIndexWords, w, `INSERT INTO messages_words (rowid, content, payload, metadata)
			SELECT s.seq, s.content, s.payload, s.metadata FROM search_pending p JOIN messages_search s ON s.seq = p.seq`},
		{&s.wIndexDone, w, `DELETE FROM search_pending`},
		{&s.rUnread, r, `SELECT count(*) FROM deliveries
			WHERE workspace = ? AND recipient = ? AND read_at IS NULL AND reader IS NULL AND rank <= ?`},
		// The inbox index, in recipient order: one pass groups it.
		{&s.rUnreadBy, r, `SELECT recipient, count(*) FROM deliveries
			WHERE workspace = ? AND read_at IS NULL AND reader IS NULL AND rank <= ? GROUP BY recipient`},
		{&s.rPeek, r, `SELECT d.id, ` + delCols + `, ` + msgCols + ` ` + inboxFrom},
		{&s.rMessage, r, `SELECT ` + msgCols + ` FROM messages m WHERE m.id = ? AND m.workspace = ?`},
		// Sends read agents to resolve @role and @everyone and to report the
		// recipient's presence: preparing that SQL each time was most of the
		// cost of a send's own code.
		{&s.rAgent, r, `SELECT ` + agentCols + ` FROM agents WHERE workspace = ? AND name = ?`},
		{&s.rAgents, r, `SELECT ` + agentCols + ` FROM agents WHERE workspace = ? ORDER BY name`},
		{&s.wResExpire, w, `DELETE FROM reservations WHERE workspace = ? AND expires_at <= ?`},
		{&s.wResLive, w, liveReservations},
		{&s.wResDelete, w, `DELETE FROM reservations WHERE workspace = ? AND id = ?`},
		{&s.wResPut, w, `INSERT INTO reservations (` + reservationCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET agent = excluded.agent, pattern = excluded.pattern,
				exclusive = excluded.exclusive, reason = excluded.reason, expires_at = excluded.expires_at`},
		{&s.rResLive, r, liveReservations},
	} {
		st, err := p.db.PrepareContext(ctx, p.sql)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", strings.Fields(p.sql)[0:3], err)
		}
		*p.dst = st
	}
	return nil
}

func (s *statements) close() {
	for _, st := range []*sql.Stmt{s.wInsMessage, s.wInsDelivery, s.wInsDeliveries, s.wInsHanded, s.wHandOut, s.wInsWorkspace,
		s.wTakeSel, s.wTakeUpd, s.wConfirm, s.wTouch, s.rUnread, s.rUnreadBy, s.rPeek, s.rMessage, s.rAgent, s.rAgents,
		s.wResExpire, s.wResLive, s.wResDelete, s.wResPut, s.rResLive, s.wIndexOwed, s.wIndexFTS, s.wIndexWords, s.wIndexDone} {
		if st != nil {
			st.Close()
		}
	}
}

// nanos stores a time as UTC unix nanoseconds; the zero time is 0.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromNanos is the inverse of nanos, in UTC.
func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// encodeMetadata stores metadata as a JSON object; nil and empty maps are NULL,
// so both read back as nil.
func encodeMetadata(md map[string]string) (any, error) {
	if len(md) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(md)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// payloadArg binds a payload so that nil is NULL and anything else, even empty,
// a BLOB of exactly those bytes.
func payloadArg(p json.RawMessage) any {
	if p == nil {
		return nil
	}
	return []byte(p)
}

// scanMessage reads msgCols (after any leading dest) into a new message.
func scanMessage(sc rowScanner, lead ...any) (*hub.Message, error) {
	var (
		m        hub.Message
		payload  []byte
		metadata sql.NullString
		created  int64
		prio     string
		ackDue   int64
		door     string
		expires  int64
		deliver  string
	)
	dest := append(lead, &m.ID, &m.Workspace, &m.From, &m.To, &m.Content, &payload, &prio,
		&m.ReplyTo, &m.ThreadID, &metadata, &created, &m.AckRequired, &ackDue,
		&m.Origin.Role, &m.Origin.Host, &door, &m.Origin.Task, &expires, &deliver)
	if err := sc.Scan(dest...); err != nil {
		return nil, err
	}
	if payload != nil {
		m.Payload = json.RawMessage(payload)
	}
	m.Priority = hub.Priority(prio)
	if metadata.Valid && metadata.String != "" {
		if err := json.Unmarshal([]byte(metadata.String), &m.Metadata); err != nil {
			return nil, fmt.Errorf("message %s: bad metadata: %w", m.ID, err)
		}
	}
	m.CreatedAt = fromNanos(created)
	m.AckDeadline = fromNanos(ackDue)
	m.Origin.Door = hub.Door(door)
	m.ExpiresAt = fromNanos(expires)
	m.Deliver = hub.DeliverMode(deliver)
	return &m, nil
}

// CreateMessage stores m and one unread delivery per distinct recipient in one
// transaction. A zero m.CreatedAt is set to now. Payload bytes are kept exactly
// (nil stays nil); an empty Metadata map reads back as nil.
func (db *DB) CreateMessage(ctx context.Context, m *hub.Message, recipients []string, handed ...hub.Handoff) error {
	const op = "create message"
	ins, err := db.newInsert(op, m, recipients, handed)
	if err != nil {
		return err
	}
	if err := db.write(ctx, op, ins.exec); err != nil {
		return err
	}
	ins.done()
	return nil
}

// insert is one message to store with its deliveries, checked and encoded
// (newInsert); exec stores it inside a writer's transaction.
type insert struct {
	db         *DB
	op         string
	m          *hub.Message
	recipients []string
	handed     []hub.Handoff
	md         any    // the metadata's JSON text, or nil
	many       string // the recipients as a JSON list, when more than one
	known      bool   // the workspace is recorded already
}

// newInsert checks m and prepares its insert. A zero m.CreatedAt is set to now.
func (db *DB) newInsert(op string, m *hub.Message, recipients []string, handed []hub.Handoff) (*insert, error) {
	if m.ID == "" || m.Workspace == "" {
		return nil, hub.Errorf(op, hub.Invalid, "message needs an id and a workspace")
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = time.Now().UTC()
	}
	if !m.AckDeadline.IsZero() && !m.AckRequired {
		return nil, hub.Errorf(op, hub.Invalid, "an ack deadline needs ack_required")
	}
	if err := hub.CheckHandoffs(recipients, handed); err != nil {
		return nil, hub.Errorf(op, hub.Invalid, "%w", err)
	}
	md, err := encodeMetadata(m.Metadata)
	if err != nil {
		return nil, hub.Errorf(op, hub.Invalid, "encode metadata: %w", err)
	}
	in := &insert{db: db, op: op, m: m, recipients: recipients, handed: handed, md: md, known: db.isKnown(m.Workspace)}
	if len(recipients) > 1 {
		b, err := json.Marshal(recipients)
		if err != nil {
			return nil, hub.Errorf(op, hub.Invalid, "encode recipients: %w", err)
		}
		in.many = string(b)
	}
	return in, nil
}

// exec stores the message and its deliveries on the writer.
func (in *insert) exec(ctx context.Context, c *sql.Conn) error {
	db, m, recipients, handed := in.db, in.m, in.recipients, in.handed
	rank := m.Priority.Rank()
	if !in.known {
		if _, err := db.stmts.wInsWorkspace.ExecContext(ctx, m.Workspace); err != nil {
			return err
		}
	}
	mark := db.expiry.mark(m, len(handed) == len(recipients))
	res, err := db.stmts.wInsMessage.ExecContext(ctx,
		m.ID, m.Workspace, m.From, m.To, m.Content, payloadArg(m.Payload), string(m.Priority),
		m.ReplyTo, m.ThreadID, in.md, nanos(m.CreatedAt), m.AckRequired, nanos(m.AckDeadline),
		m.Origin.Role, m.Origin.Host, string(m.Origin.Door), m.Origin.Task, nullable(m.IdempotencyKey), nanos(m.ExpiresAt), string(m.Deliver),
		mark)
	if err != nil {
		if hub.KindOf(db.mapErr(ctx, in.op, err)) == hub.Conflict {
			if m.IdempotencyKey != "" {
				return hub.Errorf(in.op, hub.Conflict, "message %s, or a message of %s with its idempotency key, exists already", m.ID, m.From)
			}
			return hub.Errorf(in.op, hub.Conflict, "message %s exists already", m.ID)
		}
		return err
	}
	seq, err := res.LastInsertId()
	if err != nil {
		return err
	}
	if mark == expiryByCursor && !db.expiry.ahead(seq) {
		// A reused seq (the newest messages were purged) that the cursor
		// has passed: the index finds it instead.
		if _, err := c.ExecContext(ctx, `UPDATE messages SET expiry_reported = 0 WHERE seq = ?`, seq); err != nil {
			return err
		}
	}
	switch {
	case len(recipients) == 0:
	case len(recipients) == 1 && len(handed) == 1:
		o := handed[0]
		reader, lease, readAt := handoutCols(o)
		_, err = db.stmts.wInsHanded.ExecContext(ctx, m.Workspace, recipients[0], seq, rank,
			reader, lease, nanos(o.Now), readAt, string(o.Via))
	case len(recipients) == 1:
		_, err = db.stmts.wInsDelivery.ExecContext(ctx, m.Workspace, recipients[0], seq, rank)
	default:
		if _, err = db.stmts.wInsDeliveries.ExecContext(ctx, m.Workspace, seq, rank, in.many); err != nil {
			return err
		}
		for _, o := range handed {
			reader, lease, readAt := handoutCols(o)
			if _, err = db.stmts.wHandOut.ExecContext(ctx, seq, o.Recipient,
				reader, lease, nanos(o.Now), readAt, string(o.Via)); err != nil {
				return err
			}
		}
	}
	return err
}

// done notes, once the insert committed, the workspace it recorded.
func (in *insert) done() {
	if !in.known {
		in.db.markKnown(in.m.Workspace)
	}
}

// CompleteTask confirms the task's copy held by the first of readers that
// holds it and stores its result, reply, for recipient, in one transaction
// (hub.Store).
func (db *DB) CompleteTask(ctx context.Context, readers []string, taskID string, reply *hub.Message, recipient string) ([]*hub.Delivery, error) {
	const op = "complete task"
	ins, err := db.newInsert(op, reply, []string{recipient}, nil)
	if err != nil {
		return nil, err
	}
	var held []*hub.Delivery
	err = db.write(ctx, op, func(ctx context.Context, c *sql.Conn) error {
		held = nil
		for _, reader := range readers {
			if reader == "" {
				continue
			}
			ds, err := db.confirmOn(ctx, reader, []string{taskID}, nanos(reply.CreatedAt))
			if err != nil {
				return err
			}
			if len(ds) > 0 {
				held = ds
				return ins.exec(ctx, c)
			}
		}
		return nil // nobody holds it: nothing written
	})
	if err != nil {
		return nil, err
	}
	if len(held) > 0 {
		ins.done()
	}
	return held, nil
}

// handoutCols are a handed copy's reader, lease end and read time, as
// Take writes them: leased to a reader, or read at once without one.
func handoutCols(o hub.Handoff) (reader any, lease int64, readAt any) {
	if o.Reader == "" {
		return nil, 0, nanos(o.Now)
	}
	return o.Reader, nanos(o.LeaseUntil), nil
}

// searchDebt counts the messages queued in search_pending (by whatever
// stored, edited or restored them): those owed to the search indexes. The
// writer runs it before each commit that may have changed it.
func (db *DB) searchDebt() (int64, error) {
	var n int64
	err := db.stmts.wIndexOwed.QueryRowContext(context.Background()).Scan(&n)
	return n, err
}

// indexPending adds the messages queued in search_pending to both search
// indexes and empties the queue, one statement per index: see migration 9
// for why not per message, and writer.run for when.
func (db *DB) indexPending(ctx context.Context, c *sql.Conn) error {
	if n, err := db.searchDebt(); err != nil || n == 0 {
		return err
	}
	for _, st := range []*sql.Stmt{db.stmts.wIndexFTS, db.stmts.wIndexWords, db.stmts.wIndexDone} {
		if _, err := st.ExecContext(ctx); err != nil {
			return fmt.Errorf("index messages for search: %w", err)
		}
	}
	return nil
}

// Message returns the message with the id in ws.
func (db *DB) Message(ctx context.Context, ws, id string) (*hub.Message, error) {
	const op = "get message"
	m, err := scanMessage(db.stmts.rMessage.QueryRowContext(ctx, id, ws))
	if err == sql.ErrNoRows {
		return nil, hub.Errorf(op, hub.NotFound, "no message %s in workspace %q", id, ws)
	}
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return m, nil
}

// MessageByKey returns sender's message in ws with the idempotency key.
func (db *DB) MessageByKey(ctx context.Context, ws, sender, key string) (*hub.Message, error) {
	const op = "get message by key"
	m, err := scanMessage(db.r.QueryRowContext(ctx, `SELECT `+msgCols+` FROM messages m
		WHERE m.workspace = ? AND m.sender = ? AND m.idem_key = ?`, ws, sender, key))
	if err == sql.ErrNoRows {
		return nil, hub.Errorf(op, hub.NotFound, "no message of %s with that idempotency key", sender)
	}
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	m.IdempotencyKey = key
	return m, nil
}

// History returns messages of ws, newest first, that match q.
func (db *DB) History(ctx context.Context, ws string, q hub.HistoryQuery) ([]*hub.Message, error) {
	const op = "history"
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	var b strings.Builder
	b.WriteString(`SELECT ` + msgCols + ` FROM messages m WHERE m.workspace = ?1`)
	if q.Thread != "" {
		b.WriteString(` AND m.thread_id = ?2`)
	}
	if q.Agent != "" {
		b.WriteString(` AND (m.sender = ?3 OR EXISTS (SELECT 1 FROM deliveries d
			WHERE d.workspace = ?1 AND d.recipient = ?3 AND d.message_seq = m.seq))`)
	}
	if q.Viewer != "" {
		b.WriteString(` AND ` + viewerSQL("m", "?1", "?5"))
	}
	b.WriteString(` ORDER BY m.seq DESC LIMIT ?4`)
	rows, err := db.r.QueryContext(ctx, b.String(), ws, q.Thread, q.Agent, limit, q.Viewer)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	defer rows.Close()
	var msgs []*hub.Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, db.mapErr(ctx, op, err)
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return msgs, nil
}

// viewerSQL is the condition that the viewer (the parameter v) may read the
// message m of workspace ws (hub.HistoryQuery.Viewer): m is its own (sent or
// delivered to it), or another message of a thread in which it sent or
// received one. The thread is probed by messages_by_thread, each of its
// messages by messages_by_sender's row or deliveries_by_message.
func viewerSQL(m, ws, v string) string {
	return `(` + m + `.sender = ` + v + `
		OR EXISTS (SELECT 1 FROM deliveries vd WHERE vd.message_seq = ` + m + `.seq AND vd.recipient = ` + v + `)
		OR (` + m + `.thread_id <> '' AND EXISTS (SELECT 1 FROM messages vt
			WHERE vt.workspace = ` + ws + ` AND vt.thread_id = ` + m + `.thread_id
			AND (vt.sender = ` + v + ` OR EXISTS (SELECT 1 FROM deliveries vtd
				WHERE vtd.message_seq = vt.seq AND vtd.recipient = ` + v + `)))))`
}
