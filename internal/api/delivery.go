package api

// Wire types of message delivery: status, acks, replies, overdue acks.

// MessageStatusRequest is the message_status input and
// GET /api/v1/messages/{message_id}/status.
type MessageStatusRequest struct {
	MessageID string `json:"message_id" `
}

// RecipientDelivery is where one recipient's copy of a message stands (message_status).
type RecipientDelivery struct {
	Recipient string `json:"recipient"`
	State     string `json:"state" jsonschema:"queued, delivered, redelivered, read or acked"`
	// DeliveryCount is how many times the copy was handed to a session.
	DeliveryCount int    `json:"delivery_count"`
	DeliveredAt   string `json:"delivered_at,omitempty"`
	// Session names the session that holds a delivered copy: a digest of its
	// id, never the id itself (which would let anyone act as that session).
	Session    string `json:"session,omitempty"`
	LeaseUntil string `json:"lease_until,omitempty"`
	ReadAt     string `json:"read_at,omitempty"`
	AckedAt    string `json:"acked_at,omitempty"`
	// WakePath is how the message first reached the recipient, and WokenAt
	// when: empty until something did.
	WakePath string `json:"wake_path,omitempty" jsonschema:"how it first reached the recipient: wait, check, channel, hook, tmux or managed"`
	WokenAt  string `json:"woken_at,omitempty"`
}

// MessageStatusResult is a message's delivery state, per recipient.
type MessageStatusResult struct {
	MessageID   string              `json:"message_id"`
	From        string              `json:"from"`
	To          string              `json:"to"`
	Timestamp   string              `json:"timestamp"`
	AckRequired bool                `json:"ack_required"`
	AckDeadline string              `json:"ack_deadline,omitempty"`
	Recipients  []RecipientDelivery `json:"recipients"`
}

// AckRequest is the ack_message input and POST /api/v1/acks.
type AckRequest struct {
	MessageIDs []string `json:"message_ids" `
}

// NoteWakeRequest is POST /api/v1/inbox/woken: a client hook (or another
// path that tells an agent of its mail without handing it over) reached the
// caller with these messages of its inbox.
type NoteWakeRequest struct {
	MessageIDs []string `json:"message_ids"`
	Via        string   `json:"via"`
}

// NoteWakeResult says how many copies took the path as their wake path
// (those that had none and were still in the inbox).
type NoteWakeResult struct {
	Marked int `json:"marked"`
}

// AckResult says how many acknowledgements were new.
type AckResult struct {
	Status string `json:"status"`
	Acked  int    `json:"acked" jsonschema:"newly acknowledged"`
}

// ReplyWaitRequest is the wait_for_reply input and POST /api/v1/inbox/wait-reply.
type ReplyWaitRequest struct {
	MessageID string `json:"message_id" `
	Timeout   *int   `json:"timeout,omitempty" jsonschema:"most seconds to wait (default 300, max 600)"`
}

// OverdueRequest is the list_overdue input and GET /api/v1/overdue.
type OverdueRequest struct {
	All bool `json:"all,omitempty" jsonschema:"every sender's, not only yours"`
}

// OverdueInfo is a message whose ack deadline passed with recipients that
// have not acknowledged it.
type OverdueInfo struct {
	MessageID   string   `json:"message_id"`
	From        string   `json:"from"`
	To          string   `json:"to"`
	Preview     string   `json:"preview"`
	AckDeadline string   `json:"ack_deadline"`
	Pending     []string `json:"pending" jsonschema:"recipients not acked"`
}

// OverdueResult lists overdue acknowledgements, oldest deadline first.
type OverdueResult struct {
	Overdue []OverdueInfo `json:"overdue"`
}
