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
	State     string `json:"state" jsonschema:"queued, handed, held, unconfirmed, seen, delivered, redelivered, read, acked, declined or bounced"`
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
	WakePath string `json:"wake_path,omitempty" jsonschema:"wait, check, door:claude, door:codex, door:qwen, door:opencode, channel, hook, tmux or managed"`
	WokenAt  string `json:"woken_at,omitempty"`
	// SeenAt is when the recipient's session started a turn with it.
	SeenAt string `json:"seen_at,omitempty"`
	// BouncedAt and BounceReason: the copy left the inbox unread (bounced
	// or declined), and why.
	BouncedAt    string `json:"bounced_at,omitempty"`
	BounceReason string `json:"bounce_reason,omitempty"`
	// Door is what the client said of the letter that told of it (held,
	// unconfirmed) or why none went (notloaded), since Since; Note in the
	// client's words, with what to do; Until until when the client holds
	// it, if it said.
	Door  string `json:"door,omitempty"`
	Note  string `json:"note,omitempty"`
	Since string `json:"since,omitempty"`
	Until string `json:"until,omitempty"`
}

// MessageStatusResult is a message's delivery state, per recipient.
type MessageStatusResult struct {
	MessageID   string `json:"message_id"`
	From        string `json:"from"`
	To          string `json:"to"`
	Timestamp   string `json:"timestamp"`
	AckRequired bool   `json:"ack_required"`
	AckDeadline string `json:"ack_deadline,omitempty"`
	// ExpiresAt ends the message's time to live; Deliver is its delivery
	// mode (its own or its priority's).
	ExpiresAt  string              `json:"expires_at,omitempty"`
	Deliver    string              `json:"deliver"`
	Recipients []RecipientDelivery `json:"recipients"`
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

// SeenRequest is POST /api/v1/inbox/seen: the caller's session started a
// turn with a letter through its door (a UserPromptSubmit hook found the
// letter's id in the prompt).
type SeenRequest struct {
	Letter string `json:"letter"`
}

// SeenResult says how many copies became seen.
type SeenResult struct {
	Marked int `json:"marked"`
}

// BouncedRequest is GET /api/v1/bounced: the dead letters.
type BouncedRequest struct {
	All   bool `json:"all,omitempty" jsonschema:"every sender's, not only yours"`
	Limit int  `json:"limit,omitempty" jsonschema:"at most this many (default 50)"`
}

// BouncedInfo is one recipient's copy that bounced, or whose letter a
// person declined.
type BouncedInfo struct {
	MessageID string `json:"message_id"`
	From      string `json:"from"`
	To        string `json:"to"`
	Recipient string `json:"recipient"`
	State     string `json:"state" jsonschema:"bounced or declined"`
	Preview   string `json:"preview"`
	SentAt    string `json:"sent_at"`
	BouncedAt string `json:"bounced_at"`
	Reason    string `json:"reason"`
}

// RedeliverRequest is POST /api/v1/messages/{message_id}/redeliver: send a
// bounced or declined copy again.
type RedeliverRequest struct {
	MessageID string `json:"message_id"`
	Recipient string `json:"recipient,omitempty" jsonschema:"only this recipient's copy (default: every bounced or declined one)"`
}

// RedeliverResult names the recipients whose copies went back to their
// inboxes.
type RedeliverResult struct {
	MessageID  string   `json:"message_id"`
	Recipients []string `json:"recipients"`
}

// BouncedResult lists bounced copies, newest first.
type BouncedResult struct {
	Bounced []BouncedInfo `json:"bounced"`
}

// DoorRequest is POST /api/v1/doors: the caller's client session registers
// (or refreshes) its own door. Over the Unix socket only.
type DoorRequest struct {
	Kind    string `json:"kind" jsonschema:"claude, codex, qwen or opencode"`
	Session string `json:"session" jsonschema:"the client's session: Claude Code's session id, the Codex thread id"`
	Address string `json:"address" jsonschema:"Claude: the inbox socket (CLAUDE_CODE_MESSAGING_SOCKET); Codex: CODEX_HOME"`
	Token   string `json:"token,omitempty" jsonschema:"Claude: CLAUDE_CODE_MESSAGING_TOKEN"`
}

// DoorInfo is a door as the API shows it: never its token.
type DoorInfo struct {
	ID          string `json:"id"`
	Agent       string `json:"agent"`
	Kind        string `json:"kind"`
	Session     string `json:"session"`
	Address     string `json:"address"`
	Host        string `json:"host,omitempty"`
	UID         int    `json:"uid"`
	OpenedAt    string `json:"opened_at"`
	RefreshedAt string `json:"refreshed_at"`
	ClosedAt    string `json:"closed_at,omitempty"`
	CloseReason string `json:"close_reason,omitempty"`
	// ByMCP says an MCP session of the client registered it (it closes
	// with that session); else a hook did.
	ByMCP bool `json:"by_mcp"`
}

// DoorsRequest is GET /api/v1/doors.
type DoorsRequest struct {
	All    bool `json:"all,omitempty" jsonschema:"every agent's doors, not only yours"`
	Closed bool `json:"closed,omitempty" jsonschema:"closed doors too"`
}

// DoorsResult lists doors, newest opened first.
type DoorsResult struct {
	Doors []DoorInfo `json:"doors"`
}

// DoorCloseRequest is POST /api/v1/doors/{id}/close: a person closes a
// door, or the session's hook says the session ended.
type DoorCloseRequest struct {
	ID    string `json:"id"`
	Ended bool   `json:"ended,omitempty"`
}
