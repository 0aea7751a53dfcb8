package ops

import (
	"context"
	"net/url"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/token"
)

// Operations on agent tokens: the bearer tokens that let one agent of one
// workspace reach the daemon over TCP. Who may call them is the daemon's
// access policy (an agent token may not).

func (o *Ops) tokenStore(op string) (token.Store, error) {
	if o.tokens == nil {
		return nil, hub.Errorf(op, hub.Unavailable, "this daemon issues no agent tokens")
	}
	return o.tokens, nil
}

func tokenInfo(t *token.Token) api.TokenInfo {
	return api.TokenInfo{ID: t.ID, Agent: t.Agent, Workspace: t.Workspace, Role: t.Role, CreatedAt: t.CreatedAt}
}

// CreateToken issues an agent token for in.Agent in in.Workspace (default:
// the caller's) with a role. The secret is in the result only; the store
// keeps its hash.
func (o *Ops) CreateToken(ctx context.Context, c *Caller, in api.TokenRequest) (api.TokenInfo, error) {
	const op = "create token"
	s, err := o.tokenStore(op)
	if err != nil {
		return api.TokenInfo{}, err
	}
	if err := hub.ValidName("agent name", in.Agent); err != nil {
		return api.TokenInfo{}, hub.Errorf(op, hub.Invalid, "%v", err)
	}
	ws := in.Workspace
	if ws == "" {
		ws = c.Workspace
	}
	if err := hub.ValidWorkspace(ws); err != nil {
		return api.TokenInfo{}, hub.Errorf(op, hub.Invalid, "%v", err)
	}
	// A token's name is held to the rules of a name that joins: not
	// reserved, not another agent's old name, not built to look like another.
	if err := o.hub.CheckTokenName(ctx, ws, in.Agent); err != nil {
		return api.TokenInfo{}, err
	}
	// The token binds a role: the one asked for, else the agent's, else
	// the one a new agent gets.
	role := in.Role
	if role == "" {
		a, err := o.hub.Agent(ctx, ws, in.Agent)
		switch {
		case err == nil:
			role = a.Role
		case hub.IsNotFound(err):
			role = hub.DefaultRole
		default:
			return api.TokenInfo{}, err
		}
	}
	if err := hub.ValidName("role", role); err != nil {
		return api.TokenInfo{}, hub.Errorf(op, hub.Invalid, "%v", err)
	}
	if in.Server != "" {
		if u, err := url.Parse(in.Server); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return api.TokenInfo{}, hub.Errorf(op, hub.Invalid, "invalid server URL %q: want https://HOST[:PORT]", in.Server)
		}
	}
	t, secret, hash := token.New(ws, in.Agent, role, time.Now())
	if err := s.CreateToken(ctx, t, hash); err != nil {
		return api.TokenInfo{}, err
	}
	o.log.Info("agent token created", "id", t.ID, "agent", t.Agent, "workspace", t.Workspace, "role", t.Role)
	info := tokenInfo(t)
	info.Token = secret
	info.Server = in.Server
	if info.Server == "" && o.process != nil {
		info.Server = o.process().ServerURL
	}
	if info.Server != "" {
		info.Line = api.ServeLine(info.Server, secret)
	}
	return info, nil
}

// ListTokens lists the live agent tokens, without their secrets.
func (o *Ops) ListTokens(ctx context.Context, _ *Caller, _ api.Empty) (api.TokenList, error) {
	s, err := o.tokenStore("list tokens")
	if err != nil {
		return api.TokenList{}, err
	}
	ts, err := s.Tokens(ctx)
	if err != nil {
		return api.TokenList{}, err
	}
	out := api.TokenList{Tokens: make([]api.TokenInfo, len(ts))}
	for i, t := range ts {
		out.Tokens[i] = tokenInfo(t)
	}
	return out, nil
}

// RevokeToken deletes the agent token with in.ID; it stops working at once,
// and what is open under it (streams, sessions, blocked waits) ends.
func (o *Ops) RevokeToken(ctx context.Context, _ *Caller, in api.TokenID) (api.Empty, error) {
	s, err := o.tokenStore("revoke token")
	if err != nil {
		return api.Empty{}, err
	}
	if err := s.RevokeToken(ctx, in.ID); err != nil {
		return api.Empty{}, err
	}
	o.log.Info("agent token revoked", "id", in.ID)
	if o.revoked != nil {
		o.revoked(in.ID)
	}
	return api.Empty{}, nil
}
