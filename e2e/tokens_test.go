package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/store/postgres/pgtest"
)

// tcpCall sends one JSON API request over TCP with a bearer token and headers
// ("K: V"), and returns the status and body (tcpDo, trust_test.go).
func tcpCall(t *testing.T, addr, tok, method, path, body string, headers ...string) (int, string) {
	t.Helper()
	code, b, _ := tcpDo(t, addr, tok, method, path, body, headers...)
	return code, b
}

func listenAddr(t *testing.T, e *env) string {
	t.Helper()
	var st struct {
		Listen string `json:"listen"`
	}
	e.MustJSON(&st, "daemon", "status")
	if st.Listen == "" {
		t.Fatal("no TCP address in daemon status")
	}
	return st.Listen
}

// TestAgentTokens: a token bound to alice acts as alice over TCP, is refused
// as bob, in another workspace, on token management and on profiles that take
// identities as arguments; the admin token keeps full access; a revoked token
// is refused at once; only a hash is stored.
func TestAgentTokens(t *testing.T) {
	e := newEnv(t, "PARLEY_WORKSPACE=team")
	e.Must("daemon", "start", "--listen", "127.0.0.1:0")
	addr := listenAddr(t, e)
	admin, err := os.ReadFile(filepath.Join(e.home, "token"))
	if err != nil {
		t.Fatal(err)
	}
	adminTok := strings.TrimSpace(string(admin))

	var created struct {
		ID, Agent, Workspace, Token string
	}
	e.MustJSON(&created, "token", "create", "--agent", "alice")
	if created.Agent != "alice" || created.Workspace != "team" || !strings.HasPrefix(created.Token, "parley_at_") {
		t.Fatalf("token create: got %+v; want a parley_at_ token for alice in team", created)
	}
	tok := created.Token
	if out := e.Must("token", "list"); !strings.Contains(out, created.ID) || !strings.Contains(out, "alice") || strings.Contains(out, tok) {
		t.Errorf("token list: want the id and agent, never the secret:\n%s", out)
	}
	db, _ := os.ReadFile(filepath.Join(e.home, "parley.db"))
	wal, _ := os.ReadFile(filepath.Join(e.home, "parley.db-wal"))
	if strings.Contains(string(db)+string(wal), tok) {
		t.Errorf("the token's secret is in the database; only its hash may be")
	}

	e.Must("join", "--name", "alice", "--role", "dev")
	var toAlice struct {
		MessageID string `json:"message_id"`
	}
	e.MustJSON(&toAlice, "send", "alice", "ack this", "--agent", "bob", "--json")
	checkAgentTokenRules(t, "alice", toAlice.MessageID, func(method, path, body string, headers ...string) (int, string) {
		return tcpCall(t, addr, tok, method, path, body, headers...)
	})
	// What alice sent came from alice, and nothing forged reached carol.
	out := e.Must("inbox", "--agent", "bob")
	if !strings.Contains(out, "from alice") || !strings.Contains(out, "from alice to bob") {
		t.Errorf("bob's inbox: want alice's message, from alice:\n%s", out)
	}
	if out := e.Must("inbox", "--agent", "carol"); strings.Contains(out, "forged") {
		t.Errorf("a send as bob with alice's token reached carol:\n%s", out)
	}

	// An MCP session over TCP with the token is alice's.
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	hc := &http.Client{Transport: headerRT{"Authorization": "Bearer " + tok}}
	s, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("MCP over TCP with an agent token: %v", err)
	}
	var who struct {
		Agent     string `json:"agent"`
		Workspace string `json:"workspace"`
	}
	mustCall(t, s, "whoami", nil, &who)
	s.Close()
	if who.Agent != "alice" || who.Workspace != "team" {
		t.Errorf("whoami over TCP with alice's token: got %+v, want alice in team", who)
	}

	// The admin token may act as anyone.
	if code, body := tcpCall(t, addr, adminTok, "POST", "/api/v1/messages", `{"to":"carol","content":"admin as bob"}`, "Parley-Agent: bob", "Parley-Workspace: team"); code != 200 {
		t.Errorf("admin token sending as bob: got %d %s, want 200", code, body)
	}
	e.Must("token", "revoke", created.ID)
	if code, _ := tcpCall(t, addr, tok, "GET", "/api/v1/agents", ""); code != http.StatusUnauthorized {
		t.Errorf("revoked token: got %d, want 401", code)
	}
}

// checkAgentTokenRules runs the rules of an agent token of agent (in
// workspace team, where bob sent agent the message msgID) through call: what
// it may do as agent, what it may not. The TLS listener of a team server keeps them
// exactly as loopback TCP does (TestTeamServerTLS).
func checkAgentTokenRules(t *testing.T, agent, msgID string, call func(method, path, body string, headers ...string) (int, string)) {
	t.Helper()
	for _, c := range []struct {
		name, method, path, body string
		headers                  []string
		want                     int
	}{
		{"send as itself", "POST", "/api/v1/messages", `{"to":"bob","content":"from ` + agent + `"}`, nil, 200},
		{"send naming itself", "POST", "/api/v1/messages", `{"to":"bob","content":"named"}`, []string{"Parley-Agent: " + agent}, 200},
		{"send as bob", "POST", "/api/v1/messages", `{"to":"carol","content":"forged"}`, []string{"Parley-Agent: bob"}, 403},
		{"send as bob by query", "POST", "/api/v1/messages?agent=bob", `{"to":"carol","content":"forged"}`, nil, 403},
		{"other workspace", "GET", "/api/v1/agents", "", []string{"Parley-Workspace: elsewhere"}, 403},
		{"read bob's inbox", "POST", "/api/v1/inbox/check", `{}`, []string{"Parley-Agent: bob"}, 403},
		{"token management", "GET", "/api/v1/tokens", "", nil, 403},
		{"make a token", "POST", "/api/v1/tokens", `{"agent":"bob"}`, nil, 403},
		{"join another name", "POST", "/api/v1/agents", `{"name":"mallory"}`, nil, 403},
		{"sidechat profile", "POST", "/mcp?profile=sidechat", `{}`, nil, 403},
		// Operations added after the first list: each is open or refused as
		// ops declares it, with no list of endpoints of the daemon's own.
		{"ack", "POST", "/api/v1/acks", `{"message_ids":["` + msgID + `"]}`, nil, 200},
		{"overdue", "GET", "/api/v1/overdue", "", nil, 200},
		{"reserve", "POST", "/api/v1/reservations", `{"paths":["src/a.go"],"reason":"edit"}`, nil, 200},
		{"who has", "GET", "/api/v1/reservations/who?path=src/a.go", "", nil, 200},
		{"search", "GET", "/api/v1/search?query=" + agent, "", nil, 200},
		{"own status", "PUT", "/api/v1/agents/" + agent + "/status", `{"status":"work"}`, nil, 200},
		{"bob's status", "PUT", "/api/v1/agents/bob/status", `{"status":"work"}`, nil, 403},
		{"force release", "POST", "/api/v1/reservations/force-release", `{"id":"x"}`, nil, 403},
		{"managed agents", "GET", "/api/v1/managed/agents", "", nil, 403},
		{"permissions", "GET", "/api/v1/permissions", "", nil, 403},
		{"purge", "POST", "/api/v1/purge", `{"older_than":"1h"}`, nil, 403},
		{"event stream", "GET", "/api/v1/events", "", nil, 403},
		{"dashboard", "GET", "/", "", nil, 403},
		{"health", "GET", "/api/v1/health", "", nil, 200},
		{"forged token header", "POST", "/api/v1/messages", `{"to":"bob","content":"x"}`, []string{"Parley-Agent-Token: at_other"}, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, body := call(c.method, c.path, c.body, c.headers...)
			if code != c.want {
				t.Errorf("%s %s: got %d %s, want %d", c.method, c.path, code, body, c.want)
			}
		})
	}
}

// TestAgentTokenAcrossDaemons: on a shared PostgreSQL store a token made on
// one daemon admits its agent at another, and its revocation there too.
func TestAgentTokenAcrossDaemons(t *testing.T) {
	dsn := pgtest.Database(t)
	a := newEnv(t, "PARLEY_STORE="+dsn, "PARLEY_WORKSPACE=team")
	b := newEnv(t, "PARLEY_STORE="+dsn, "PARLEY_WORKSPACE=team")
	a.Must("daemon", "start")
	b.Must("daemon", "start", "--listen", "127.0.0.1:0")
	addr := listenAddr(t, b)
	var created struct{ ID, Token string }
	a.MustJSON(&created, "token", "create", "--agent", "alice")
	if code, body := tcpCall(t, addr, created.Token, "POST", "/api/v1/messages", `{"to":"bob","content":"via B"}`); code != 200 {
		t.Fatalf("send at B with a token made at A: got %d %s, want 200", code, body)
	}
	if code, _ := tcpCall(t, addr, created.Token, "POST", "/api/v1/messages", `{"to":"bob","content":"x"}`, "Parley-Agent: bob"); code != 403 {
		t.Errorf("alice's token as bob at B: got %d, want 403", code)
	}
	a.Must("token", "revoke", created.ID)
	if code, _ := tcpCall(t, addr, created.Token, "GET", "/api/v1/agents", ""); code != http.StatusUnauthorized {
		t.Errorf("token revoked at A, used at B: got %d, want 401", code)
	}
}

// headerRT adds headers to every request.
type headerRT map[string]string

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}
