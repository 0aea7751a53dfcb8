package api

import "time"

// DashboardLoginRequest is POST /api/v1/dashboard/login, which only the Unix
// socket serves: a one-time link signs a browser in as the person User.
type DashboardLoginRequest struct {
	User string `json:"user"`
}

// DashboardLogin is its result: the link to open, on the dashboard's own
// loopback listener (started on the first request, reused after).
type DashboardLogin struct {
	URL     string    `json:"url"`
	Addr    string    `json:"addr"`
	User    string    `json:"user"`
	Expires time.Time `json:"expires"`
}

// SignOutResult is POST /api/v1/dashboard/sign-out-all, which only the Unix
// socket serves: every dashboard sign-in ended.
type SignOutResult struct {
	Ended int `json:"ended"`
}

// UnreadResult is GET /api/v1/dashboard/unread: the unread messages of each
// agent of the workspace, and of the caller.
type UnreadResult struct {
	Workspace string         `json:"workspace"`
	Unread    map[string]int `json:"unread"`
}

// DashboardSearchRequest is GET /api/v1/dashboard/search.
type DashboardSearchRequest struct {
	Q     string `json:"q"`
	From  string `json:"from,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

// DeliveriesRequest is GET /api/v1/dashboard/deliveries: message ids,
// comma-separated.
type DeliveriesRequest struct {
	IDs string `json:"ids"`
}

// DashboardSearchResult is GET /api/v1/dashboard/search?q=: messages of the
// whole workspace that match, best first.
type DashboardSearchResult struct {
	Hits []DashboardSearchHit `json:"hits"`
}

// DashboardSearchHit is one match; Snippet marks the matched words with **.
type DashboardSearchHit struct {
	MessageID string `json:"message_id"`
	ThreadID  string `json:"thread_id"`
	From      string `json:"from"`
	To        string `json:"to"`
	Priority  string `json:"priority"`
	Timestamp string `json:"timestamp"`
	Snippet   string `json:"snippet"`
}

// DeliveriesResult is GET /api/v1/dashboard/deliveries?ids=: for each message,
// each recipient's copy.
type DeliveriesResult struct {
	Deliveries map[string][]DeliveryInfo `json:"deliveries"`
}

// DeliveryInfo is where one recipient's copy stands: queued, delivered,
// redelivered, read or acked, and how many times it was handed out.
type DeliveryInfo struct {
	Recipient string `json:"recipient"`
	State     string `json:"state"`
	Count     int    `json:"count"`
	ReadAt    string `json:"read_at,omitempty"`
	AckedAt   string `json:"acked_at,omitempty"`
	WakePath  string `json:"wake_path,omitempty"`
	WokenAt   string `json:"woken_at,omitempty"`
	SeenAt    string `json:"seen_at,omitempty"`
	// BounceReason says why a bounced (or declined) copy left the inbox.
	BounceReason string `json:"bounce_reason,omitempty"`
	// Door, Note, Since and Until: what the client said of the letter that
	// told of it (held: why, how to release it, until when), as in
	// message_status.
	Door  string `json:"door,omitempty"`
	Note  string `json:"note,omitempty"`
	Since string `json:"since,omitempty"`
	Until string `json:"until,omitempty"`
}
