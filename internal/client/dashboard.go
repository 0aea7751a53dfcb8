package client

import (
	"context"

	"github.com/parley-dev/parley/internal/api"
)

// DashboardLogin asks the daemon for a one-time dashboard sign-in link for
// the person user, starting the dashboard's listener if it is not running.
func (c *Client) DashboardLogin(ctx context.Context, user string) (*api.DashboardLogin, error) {
	var out api.DashboardLogin
	return &out, c.do(ctx, "POST", "/dashboard/login", nil, api.DashboardLoginRequest{User: user}, &out)
}

// DashboardSignOutAll ends every dashboard sign-in.
func (c *Client) DashboardSignOutAll(ctx context.Context) (*api.SignOutResult, error) {
	var out api.SignOutResult
	return &out, c.do(ctx, "POST", "/dashboard/sign-out-all", nil, api.Empty{}, &out)
}
