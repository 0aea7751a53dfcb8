package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/parley-dev/parley/internal/api"
)

// Queue lists the tasks waiting in a queue, next first.
func (c *Client) Queue(ctx context.Context, queue string, limit int) (*api.QueueResult, error) {
	var q url.Values
	if limit > 0 {
		q = url.Values{"limit": {strconv.Itoa(limit)}}
	}
	var out api.QueueResult
	return &out, c.do(ctx, http.MethodGet, "/queues/"+url.PathEscape(queue), q, nil, &out)
}

// ClaimTask takes the next task of a queue for the client's agent, waiting
// up to the request's timeout.
func (c *Client) ClaimTask(ctx context.Context, r api.ClaimTaskRequest) (*api.ClaimTaskResult, error) {
	var out api.ClaimTaskResult
	return &out, c.do(ctx, http.MethodPost, "/queues/"+url.PathEscape(r.Queue)+"/claim", nil, r, &out)
}

// CompleteTask finishes a claimed task and tells its sender.
func (c *Client) CompleteTask(ctx context.Context, r api.CompleteTaskRequest) (*api.CompleteTaskResult, error) {
	var out api.CompleteTaskResult
	return &out, c.do(ctx, http.MethodPost, "/tasks/"+url.PathEscape(r.TaskID)+"/complete", nil, r, &out)
}

// RenewTask extends a claim on a task by lease seconds from now (0: the
// daemon's claim lease).
func (c *Client) RenewTask(ctx context.Context, id string, lease int) (*api.RenewTaskResult, error) {
	var out api.RenewTaskResult
	return &out, c.do(ctx, http.MethodPost, "/tasks/"+url.PathEscape(id)+"/renew", nil, api.RenewTaskRequest{TaskID: id, LeaseSeconds: lease}, &out)
}

// ReleaseTask gives a claimed task back to its queue.
func (c *Client) ReleaseTask(ctx context.Context, id string) (*api.ReleaseTaskResult, error) {
	var out api.ReleaseTaskResult
	return &out, c.do(ctx, http.MethodPost, "/tasks/"+url.PathEscape(id)+"/release", nil, api.ReleaseTaskRequest{TaskID: id}, &out)
}
