package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parley-dev/parley/internal/hub"
)

// msgCols are a message's columns as scanMessage reads them, for a messages table
// aliased m.
const msgCols = `m.id, m.workspace, m.sender, m.to_addr, m.content, m.payload, m.priority,
	m.reply_to, m.thread_id, m.metadata, m.created_at, m.ack_required, m.ack_deadline,
	m.sender_role, m.origin_host, m.origin_door, m.task_of, m.expires_at, m.deliver`

// scanMessage reads msgCols (after any leading dest) into a new message.
func scanMessage(row pgx.Row, lead ...any) (*hub.Message, error) {
	var (
		m        hub.Message
		payload  []byte
		metadata []byte
		prio     string
		ackDue   *time.Time
		door     string
		expires  *time.Time
		deliver  string
	)
	if err := row.Scan(append(lead, &m.ID, &m.Workspace, &m.From, &m.To, &m.Content, &payload, &prio,
		&m.ReplyTo, &m.ThreadID, &metadata, &m.CreatedAt, &m.AckRequired, &ackDue,
		&m.Origin.Role, &m.Origin.Host, &door, &m.Origin.Task, &expires, &deliver)...); err != nil {
		return nil, err
	}
	m.Origin.Door = hub.Door(door)
	if ackDue != nil {
		m.AckDeadline = ackDue.UTC()
	}
	if expires != nil {
		m.ExpiresAt = expires.UTC()
	}
	m.Deliver = hub.DeliverMode(deliver)
	if payload != nil {
		m.Payload = json.RawMessage(payload)
	}
	m.Priority = hub.Priority(prio)
	if len(metadata) > 0 {
		if err := json.Unmarshal(metadata, &m.Metadata); err != nil {
			return nil, fmt.Errorf("message %s: bad metadata: %w", m.ID, err)
		}
	}
	m.CreatedAt = m.CreatedAt.UTC()
	return &m, nil
}

func collectMessages(rows pgx.Rows) ([]*hub.Message, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*hub.Message, error) { return scanMessage(r) })
}

// metadataArg binds metadata as a JSON object; nil and empty maps are NULL, so
// both read back as nil.
func metadataArg(md map[string]string) (any, error) {
	if len(md) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(md)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// CreateMessage stores m and one unread delivery per distinct recipient,
// atomically. A zero m.CreatedAt is set to now. Payload bytes are kept exactly
// (nil stays nil); an empty Metadata map reads back as nil.
//
// Concurrent calls commit together (sendbatch.go): one round trip and one
// WAL flush for all the sends that queued while the previous batch
// committed, which also tells the other daemons on the database. It returns
// once m is durable.
func (db *DB) CreateMessage(ctx context.Context, m *hub.Message, recipients []string, handed ...hub.Handoff) error {
	p, err := db.newSend(m, recipients, handed)
	if err != nil {
		return err
	}
	return db.send(ctx, p)
}

// newSend checks m and prepares its send.
func (db *DB) newSend(m *hub.Message, recipients []string, handed []hub.Handoff) (*pendingSend, error) {
	const op = "create message"
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
	md, err := metadataArg(m.Metadata)
	if err != nil {
		return nil, hub.Errorf(op, hub.Invalid, "encode metadata: %w", err)
	}
	return &pendingSend{m: m, recipients: distinct(recipients), handed: handed, metadata: md}, nil
}

// distinct returns names without repeats, in their order; never nil.
func distinct(names []string) []string {
	out := make([]string, 0, len(names))
	if len(names) <= 1 {
		return append(out, names...)
	}
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// Message returns the message with the id in ws.
func (db *DB) Message(ctx context.Context, ws, id string) (*hub.Message, error) {
	const op = "get message"
	m, err := scanMessage(db.pool.QueryRow(ctx, `SELECT `+msgCols+` FROM messages m WHERE m.id = $1 AND m.workspace = $2`, id, ws))
	if errors.Is(err, pgx.ErrNoRows) {
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
	m, err := scanMessage(db.pool.QueryRow(ctx, `SELECT `+msgCols+` FROM messages m
		WHERE m.workspace = $1 AND m.sender = $2 AND m.idem_key = $3`, ws, sender, key))
	if errors.Is(err, pgx.ErrNoRows) {
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
	args := []any{ws}
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	var b strings.Builder
	b.WriteString(`SELECT ` + msgCols + ` FROM messages m WHERE m.workspace = $1`)
	if q.Thread != "" {
		b.WriteString(` AND m.thread_id = ` + arg(q.Thread))
	}
	if q.Agent != "" {
		a := arg(q.Agent)
		b.WriteString(` AND (m.sender = ` + a + ` OR EXISTS (SELECT 1 FROM deliveries d
			WHERE d.workspace = $1 AND d.recipient = ` + a + ` AND d.message_seq = m.seq))`)
	}
	if q.Viewer != "" {
		b.WriteString(` AND ` + viewerSQL("m", "$1", arg(q.Viewer)))
	}
	b.WriteString(` ORDER BY m.seq DESC LIMIT ` + arg(limit))
	rows, err := db.pool.Query(ctx, b.String(), args...)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	msgs, err := collectMessages(rows)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return msgs, nil
}

// viewerSQL is the condition that the viewer (the parameter v) may read the
// message m of workspace ws (hub.HistoryQuery.Viewer): m is its own (sent or
// delivered to it), or another message of a thread in which it sent or
// received one.
func viewerSQL(m, ws, v string) string {
	return `(` + m + `.sender = ` + v + `
		OR EXISTS (SELECT 1 FROM deliveries vd WHERE vd.message_seq = ` + m + `.seq AND vd.recipient = ` + v + `)
		OR (` + m + `.thread_id <> '' AND EXISTS (SELECT 1 FROM messages vt
			WHERE vt.workspace = ` + ws + ` AND vt.thread_id = ` + m + `.thread_id
			AND (vt.sender = ` + v + ` OR EXISTS (SELECT 1 FROM deliveries vtd
				WHERE vtd.message_seq = vt.seq AND vtd.recipient = ` + v + `)))))`
}
