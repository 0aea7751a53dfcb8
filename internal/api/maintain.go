package api

// PurgeRequest deletes the read messages older than an age.
type PurgeRequest struct {
	OlderThan string `json:"older_than" jsonschema:"an age such as 30d, 2w or 12h"`
}

// PurgeResult says what a purge removed.
type PurgeResult struct {
	Messages   int64  `json:"messages"`
	Deliveries int64  `json:"deliveries"`
	Before     string `json:"before"` // the cutoff, RFC 3339
}
