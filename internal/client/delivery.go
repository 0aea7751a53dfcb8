package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/parley-dev/parley/internal/api"
)

// MessageStatus shows where each copy of a message stands.
func (c *Client) MessageStatus(ctx context.Context, id string) (*api.MessageStatusResult, error) {
	var out api.MessageStatusResult
	return &out, c.do(ctx, http.MethodGet, "/messages/"+url.PathEscape(id)+"/status", nil, nil, &out)
}

// Ack acknowledges messages sent to this agent.
func (c *Client) Ack(ctx context.Context, ids []string) (*api.AckResult, error) {
	var out api.AckResult
	return &out, c.do(ctx, http.MethodPost, "/acks", nil, api.AckRequest{MessageIDs: ids}, &out)
}

// NoteWake records that path (hook, tmux...) told the client's agent of
// these messages of its inbox.
func (c *Client) NoteWake(ctx context.Context, ids []string, path string) (*api.NoteWakeResult, error) {
	var out api.NoteWakeResult
	return &out, c.do(ctx, http.MethodPost, "/inbox/woken", nil, api.NoteWakeRequest{MessageIDs: ids, Via: path}, &out)
}

// WaitForReply blocks for a reply to a message.
func (c *Client) WaitForReply(ctx context.Context, r api.ReplyWaitRequest) (*api.WaitResult, error) {
	var out api.WaitResult
	return &out, c.do(ctx, http.MethodPost, "/inbox/reply", nil, r, &out)
}

// WaitForReplyLeased is WaitForReply for a client that confirms by itself
// (see WaitLeased).
func (c *Client) WaitForReplyLeased(ctx context.Context, r api.ReplyWaitRequest) (*api.WaitResult, string, error) {
	var out api.WaitResult
	reader, err := c.leased(ctx, "/inbox/reply", r, &out)
	return &out, reader, err
}

// Overdue lists messages whose ack deadline passed unacknowledged.
func (c *Client) Overdue(ctx context.Context, all bool) (*api.OverdueResult, error) {
	var out api.OverdueResult
	q := url.Values{}
	if all {
		q.Set("all", "true")
	}
	return &out, c.do(ctx, http.MethodGet, "/overdue", q, nil, &out)
}

// Redeliver sends a bounced or declined copy of a message again (only
// recipient's, if not "").
func (c *Client) Redeliver(ctx context.Context, id, recipient string) (*api.RedeliverResult, error) {
	var out api.RedeliverResult
	return &out, c.do(ctx, http.MethodPost, "/messages/"+url.PathEscape(id)+"/redeliver", nil, api.RedeliverRequest{MessageID: id, Recipient: recipient}, &out)
}
