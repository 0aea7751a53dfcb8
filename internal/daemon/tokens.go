package daemon

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/token"
)

// The access model, in one place:
//   - the Unix socket (0600, in a 0700 directory) trusts its OS user: any
//     identity, every endpoint;
//   - over TCP the admin token ($PARLEY_HOME/token) has the same full access;
//   - over TCP an agent token (`parley token create`) acts as its one agent in
//     its one workspace, with its one role: a request that names another
//     agent, workspace or role is refused, one that names none is given the
//     token's, and only the operations that ops opens to agent tokens run
//     for it (ops' table: Access); what is open under it ends when it is revoked
//     (token.Watcher).

// agentProfiles are the MCP profiles open to an agent token: their tools act
// as the session's own agent. The others take identities as arguments
// (sidechat's "as", agentmail's sender) or manage other agents.
var agentProfiles = []string{"native", "lean", "self", "gateway"}

// agentMay reports whether an agent-token request may reach its endpoint:
// MCP (whose tools check their operations themselves) and the JSON API's
// operations that ops opens to agent tokens. Everything else (the dashboard,
// the event stream, token management) is refused.
func (d *Daemon) agentMay(r *http.Request) bool {
	if r.URL.Path == "/mcp" {
		return true
	}
	_, pattern := d.mux.Handler(r)
	return d.access.AgentMay(pattern)
}

// bindAgent checks an agent-token request against the token's identity and
// the endpoints open to agent tokens (may), and makes that identity the
// request's. It returns the refusal, or "".
func bindAgent(r *http.Request, t *token.Token, may func(*http.Request) bool) string {
	q := r.URL.Query()
	claim := func(header, query, inHello string) []string {
		vs := []string{inHello}
		if header != "" {
			vs = append(vs, r.Header.Values(header)...)
		}
		return slices.DeleteFunc(append(vs, q[query]...), func(v string) bool { return v == "" })
	}
	hello, err := api.HelloOf(r.Header, q)
	if err != nil {
		return err.Error()
	}
	for _, a := range claim(api.HeaderAgent, "agent", hello.Agent) {
		if a != t.Agent {
			return fmt.Sprintf("this token speaks for agent %q only; it cannot act as %q", t.Agent, a)
		}
	}
	for _, w := range claim(api.HeaderWorkspace, "workspace", hello.Workspace) {
		if w != t.Workspace {
			return fmt.Sprintf("this token is for workspace %q only; it cannot reach workspace %q", t.Workspace, w)
		}
	}
	// The token binds the role too: a session cannot make its agent a
	// reviewer to receive @reviewer mail. A token without one (made before
	// roles were bound) leaves the agent its role.
	for _, role := range claim("", "role", hello.Role) {
		if role != t.Role {
			if t.Role == "" {
				return fmt.Sprintf("this token binds no role: agent %q keeps the role it has and cannot take %q; make a token with --role", t.Agent, role)
			}
			return fmt.Sprintf("this token gives agent %q the role %q only; it cannot take %q", t.Agent, t.Role, role)
		}
	}
	for _, p := range hello.Profiles {
		if !slices.Contains(agentProfiles, p) {
			return fmt.Sprintf("profile %q is not open to an agent token (open: %s); use the admin token", p, strings.Join(agentProfiles, ", "))
		}
	}
	r.Header.Set(api.HeaderAgent, t.Agent)
	r.Header.Set(api.HeaderWorkspace, t.Workspace)
	// The identity an MCP session starts with is the token's.
	hello.Agent, hello.Workspace, hello.Role = t.Agent, t.Workspace, t.Role
	r.Header.Set(api.HeaderHello, hello.Header())
	r.Header.Del("Parley-Role") // read for one release (api.HelloOf)
	r.Header.Set(api.HeaderAgentToken, t.ID)
	if !may(r) {
		return fmt.Sprintf("%s %s is not open to an agent token; use the admin token", r.Method, r.URL.Path)
	}
	return ""
}

// lookupToken finds the live agent token with the secret.
func lookupToken(ctx context.Context, s token.Store, secret string) (*token.Token, error) {
	return s.TokenByHash(ctx, token.Hash(secret))
}

// tokenNotices hears of agent tokens revoked on other daemons sharing the
// store, and ends what is open under them here.
type tokenNotices struct{ d *Daemon }

func (n tokenNotices) Revoked(id string) { n.d.revocations.Revoked(id) }

// Recheck runs after the notices may have been missed (the listening
// connection was lost): the store says which tokens live.
func (n tokenNotices) Recheck() {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := n.d.revocations.Check(ctx, n.d.db); err != nil {
			n.d.log.Warn("check for revoked agent tokens", "err", err)
		}
	}()
}
