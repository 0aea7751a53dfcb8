package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/parley-dev/parley/internal/api"
)

// Managed agents (the daemon's runner) and their permission requests.

func managedPath(id string) string { return "/managed/agents/" + url.PathEscape(id) }

// CreateManagedAgent launches an agent in the client's workspace.
func (c *Client) CreateManagedAgent(ctx context.Context, r api.CreateManagedAgentRequest) (*api.ManagedAgent, error) {
	var out api.ManagedAgent
	return &out, c.do(ctx, http.MethodPost, "/managed/agents", nil, r, &out)
}

// ManagedAgents lists the managed agents of the workspace (of all with all).
func (c *Client) ManagedAgents(ctx context.Context, all bool) (*api.ManagedAgentsResult, error) {
	var out api.ManagedAgentsResult
	q := url.Values{}
	if all {
		q.Set("all", "true")
	}
	return &out, c.do(ctx, http.MethodGet, "/managed/agents", q, nil, &out)
}

// ManagedAgent shows one agent with its latest runs.
func (c *Client) ManagedAgent(ctx context.Context, id string) (*api.ManagedAgentDetail, error) {
	var out api.ManagedAgentDetail
	return &out, c.do(ctx, http.MethodGet, managedPath(id), nil, nil, &out)
}

// PromptAgent sends a prompt, queued if a run is in progress.
func (c *Client) PromptAgent(ctx context.Context, id, prompt string) (*api.PromptResult, error) {
	var out api.PromptResult
	return &out, c.do(ctx, http.MethodPost, managedPath(id)+"/prompt", nil, api.PromptRequest{Prompt: prompt}, &out)
}

// WaitAgent blocks until the agent's run ends or it asks for permission,
// at most timeout seconds (0: the daemon's default).
func (c *Client) WaitAgent(ctx context.Context, id string, timeout int) (*api.WaitAgentResult, error) {
	var out api.WaitAgentResult
	in := api.WaitAgentRequest{}
	if timeout != 0 {
		in.Timeout = &timeout
	}
	return &out, c.do(ctx, http.MethodPost, managedPath(id)+"/wait", nil, in, &out)
}

// CancelAgent interrupts the agent's current run.
func (c *Client) CancelAgent(ctx context.Context, id string) (*api.SuccessResult, error) {
	var out api.SuccessResult
	return &out, c.do(ctx, http.MethodPost, managedPath(id)+"/cancel", nil, struct{}{}, &out)
}

// KillAgent ends the agent for good.
func (c *Client) KillAgent(ctx context.Context, id string) (*api.SuccessResult, error) {
	var out api.SuccessResult
	return &out, c.do(ctx, http.MethodPost, managedPath(id)+"/kill", nil, struct{}{}, &out)
}

// AgentActivity returns timeline events: limit from offset, or the latest
// limit when offset is negative.
func (c *Client) AgentActivity(ctx context.Context, id string, offset, limit int) (*api.ActivityResult, error) {
	var out api.ActivityResult
	q := url.Values{}
	if offset >= 0 {
		q.Set("offset", fmt.Sprint(offset))
	}
	if limit > 0 {
		q.Set("limit", fmt.Sprint(limit))
	}
	return &out, c.do(ctx, http.MethodGet, managedPath(id)+"/activity", q, nil, &out)
}

// SetAgentMode changes the agent's permission mode.
func (c *Client) SetAgentMode(ctx context.Context, id, mode string) (*api.ModeResult, error) {
	var out api.ModeResult
	return &out, c.do(ctx, http.MethodPut, managedPath(id)+"/mode", nil, api.ModeRequest{Mode: mode}, &out)
}

// Permissions lists pending permission requests of the workspace (of all with all).
func (c *Client) Permissions(ctx context.Context, all bool) (*api.PermissionsResult, error) {
	var out api.PermissionsResult
	q := url.Values{}
	if all {
		q.Set("all", "true")
	}
	return &out, c.do(ctx, http.MethodGet, "/permissions", q, nil, &out)
}

// RespondPermission allows or denies a pending request.
func (c *Client) RespondPermission(ctx context.Context, id string, d api.PermissionDecision) error {
	return c.do(ctx, http.MethodPost, "/permissions/"+url.PathEscape(id), nil, d, nil)
}

// AskPermission files a permission request as the client's agent and waits
// for its outcome (up to r.Wait seconds).
func (c *Client) AskPermission(ctx context.Context, r api.AskPermissionRequest) (*api.PermissionOutcome, error) {
	var out api.PermissionOutcome
	return &out, c.do(ctx, http.MethodPost, "/permissions", nil, r, &out)
}
