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

// UnreadResult is GET /api/v1/dashboard/unread: the unread messages of each
// agent of the workspace, and of the caller.
type UnreadResult struct {
	Workspace string         `json:"workspace"`
	Unread    map[string]int `json:"unread"`
}
