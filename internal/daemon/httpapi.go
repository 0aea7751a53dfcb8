package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/mcpserver"
)

// maxAPIBody bounds a JSON API request body: a message at the size limit plus
// room for its envelope. Bigger bodies are refused before they are parsed.
const maxAPIBody = 4 << 20

func (d *Daemon) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", d.mcp)
	p := api.Prefix
	mux.Handle("GET "+p+"/health", endpoint(false, d.health))
	mux.Handle("GET "+p+"/status", endpoint(false, d.status))
	mux.HandleFunc("GET "+p+"/events", d.eventsStream)
	mux.Handle("POST "+p+"/agents", endpoint(false, d.join))
	mux.Handle("GET "+p+"/agents", endpoint(false, d.agents))
	mux.Handle("GET "+p+"/agents/{name}", endpoint(false, d.agent))
	mux.Handle("PUT "+p+"/agents/{name}/status", endpoint(false, d.setStatus))
	mux.Handle("POST "+p+"/messages", endpoint(true, d.send))
	mux.Handle("GET "+p+"/messages", endpoint(false, d.history))
	mux.Handle("GET "+p+"/messages/{id}", endpoint(false, d.message))
	mux.Handle("GET "+p+"/inbox", endpoint(true, d.peek))
	mux.Handle("POST "+p+"/inbox/check", endpoint(true, d.check))
	mux.Handle("POST "+p+"/inbox/wait", endpoint(true, d.wait))
	mux.Handle("POST "+p+"/broadcast", endpoint(true, d.broadcast))
	mux.Handle("GET "+p+"/groups", endpoint(false, d.groups))
	mux.Handle("POST "+p+"/groups", endpoint(false, d.createGroup))
	mux.Handle("GET "+p+"/groups/{name}", endpoint(false, d.group))
	mux.Handle("DELETE "+p+"/groups/{name}", endpoint(false, d.deleteGroup))
	mux.Handle("POST "+p+"/groups/{name}/members", endpoint(false, d.addMember))
	mux.Handle("DELETE "+p+"/groups/{name}/members", endpoint(false, d.removeMember))
	d.gatewayRoutes(mux)
	d.runnerRoutes(mux)
	d.tokenRoutes(mux)
	d.dashboardRoutes(mux)
	return d.checkOrigin(mux)
}

// checkOrigin refuses browser requests from origins the daemon did not issue:
// a web page must never drive the bus through a user's browser.
func (d *Daemon) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !d.origins[o] {
			writeErr(w, hub.Errorf("http", hub.Forbidden, "cross-origin request from %q refused", o))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// caller is the workspace and agent a request speaks for.
func caller(r *http.Request) (ws, agent string, err error) {
	ws = r.Header.Get(api.HeaderWorkspace)
	if ws == "" {
		ws = r.URL.Query().Get("workspace")
	}
	if ws == "" {
		ws = mcpserver.DefaultWorkspace
	}
	if err := hub.ValidWorkspace(ws); err != nil {
		return "", "", err
	}
	agent = r.Header.Get(api.HeaderAgent)
	if agent == "" {
		agent = r.URL.Query().Get("agent")
	}
	return ws, agent, nil
}

func needAgent(agent string) error {
	if agent == "" {
		return hub.Errorf("", hub.Invalid, "no agent identity: pass --agent NAME, set PARLEY_AGENT, or run `parley join` in this directory")
	}
	return nil
}

func decode(w http.ResponseWriter, r *http.Request, v any) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxAPIBody)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return hub.Errorf("decode request", hub.TooLarge, "request body over %d bytes", mbe.Limit)
		}
		return hub.Errorf("decode request", hub.Invalid, "invalid JSON body: %v", err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, err error) {
	writeJSON(w, api.HTTPStatus(hub.KindOf(err)), api.NewErrorBody(err))
}

// req is what a JSON API handler knows of its request.
type req struct {
	*http.Request
	ws, agent string
}

// none is the body of a request that has none.
type none struct{}

// endpoint adapts fn to HTTP: it finds the caller (and insists on an agent when
// asked), decodes the body into In unless In is none, and writes fn's result,
// or its error with the status of its kind.
func endpoint[In, Out any](agentNeeded bool, fn func(r req, in In) (Out, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ws, agent, err := caller(r)
		if err == nil && agentNeeded {
			err = needAgent(agent)
		}
		var in In
		if _, empty := any(in).(none); err == nil && !empty {
			err = decode(w, r, &in)
		}
		if err != nil {
			writeErr(w, err)
			return
		}
		out, err := fn(req{Request: r, ws: ws, agent: agent}, in)
		if err != nil {
			writeErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

func (d *Daemon) health(r req, _ none) (api.Health, error) {
	return api.Health{OK: true, PID: os.Getpid(), Version: d.cfg.Version}, nil
}

func (d *Daemon) status(r req, _ none) (api.Status, error) {
	wss, err := d.hub.Workspaces(r.Context())
	if err != nil {
		return api.Status{}, err
	}
	if wss == nil {
		wss = []string{}
	}
	st := api.Status{
		PID: os.Getpid(), Version: d.cfg.Version, StartedAt: d.started.UTC(),
		Uptime: time.Since(d.started).Round(time.Second).String(),
		Home:   d.paths.Home, Socket: d.paths.Socket, Store: d.storeKind, Database: d.storeDesc,
		Workspaces: wss, Sessions: d.mcp.Sessions(), Listen: d.TCPAddr(), Goroutines: runtime.NumGoroutine(),
	}
	return st, nil
}

func (d *Daemon) agentInfo(a *hub.Agent) api.AgentInfo {
	return api.Agent(hub.AgentView{Agent: a, Active: d.hub.Active(a)})
}

func (d *Daemon) join(r req, in api.JoinRequest) (api.AgentInfo, error) {
	a, err := d.hub.Join(r.Context(), hub.JoinRequest{Workspace: r.ws, Name: in.Name, Role: in.Role, Module: in.Module})
	if err != nil {
		return api.AgentInfo{}, err
	}
	return d.agentInfo(a), nil
}

func (d *Daemon) agents(r req, _ none) (api.ListAgentsResult, error) {
	as, err := d.hub.Agents(r.Context(), r.ws)
	if err != nil {
		return api.ListAgentsResult{}, err
	}
	activeOnly := r.URL.Query().Get("include_offline") == "false"
	out := api.ListAgentsResult{Agents: []api.AgentInfo{}}
	for _, a := range as {
		if activeOnly && !a.Active {
			continue
		}
		out.Agents = append(out.Agents, api.Agent(a))
	}
	out.Count = len(out.Agents)
	return out, nil
}

func (d *Daemon) agent(r req, _ none) (api.AgentInfo, error) {
	a, err := d.hub.Agent(r.Context(), r.ws, r.PathValue("name"))
	if err != nil {
		return api.AgentInfo{}, err
	}
	return d.agentInfo(a), nil
}

func (d *Daemon) setStatus(r req, in api.StatusRequest) (api.StatusRequest, error) {
	return in, d.hub.SetStatus(r.Context(), r.ws, r.PathValue("name"), hub.Status(in.Status))
}

func (d *Daemon) send(r req, in api.SendRequest) (api.SendResult, error) {
	res, err := d.hub.Send(r.Context(), hub.SendRequest{Workspace: r.ws, From: r.agent, To: in.To, Content: in.Content,
		Payload: in.Payload, Priority: in.Priority, ReplyTo: in.ReplyTo, Metadata: in.Metadata})
	if err != nil {
		return api.SendResult{}, err
	}
	return api.SendResult{Status: "delivered", MessageID: res.Message.ID, Recipients: res.Recipients, ThreadID: res.Message.ThreadID}, nil
}

func (d *Daemon) history(r req, _ none) (api.HistoryResult, error) {
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	ms, err := d.hub.History(r.Context(), r.ws, hub.HistoryQuery{Thread: q.Get("thread"), Agent: q.Get("with"), Limit: limit})
	return api.HistoryResult{Messages: api.Messages(ms)}, err
}

func (d *Daemon) message(r req, _ none) (api.MessageInfo, error) {
	m, err := d.hub.Message(r.Context(), r.ws, r.PathValue("id"))
	if err != nil {
		return api.MessageInfo{}, err
	}
	return api.Message(m), nil
}

func (d *Daemon) peek(r req, _ none) (api.CheckResult, error) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	ms, n, err := d.hub.Peek(r.Context(), r.ws, r.agent, limit)
	return checkResult(ms, n-len(ms)), err
}

func checkResult(ms []*hub.Message, remaining int) api.CheckResult {
	out := api.CheckResult{Status: "empty", Messages: api.Messages(ms), Remaining: max(remaining, 0)}
	if len(ms) > 0 {
		out.Status = "messages"
	}
	return out
}

func (d *Daemon) check(r req, in api.CheckRequest) (api.CheckResult, error) {
	ms, remaining, err := d.hub.Check(r.Context(), r.ws, r.agent, in.Limit)
	return checkResult(ms, remaining), err
}

func (d *Daemon) wait(r req, in api.WaitRequest) (api.WaitResult, error) {
	timeout, err := hub.ValidTimeout(in.Timeout)
	if err != nil {
		return api.WaitResult{}, err
	}
	filter, err := hub.ParsePriorityFilter(in.PriorityFilter)
	if err != nil {
		return api.WaitResult{}, err
	}
	start := time.Now()
	m, err := d.hub.Wait(r.Context(), hub.WaitRequest{Workspace: r.ws, Agent: r.agent, Timeout: timeout, Filter: filter})
	if err != nil {
		return api.WaitResult{}, err
	}
	out := api.WaitResult{Status: "timeout", WaitedSeconds: int(time.Since(start).Seconds())}
	if m != nil {
		mi := api.Message(m)
		out.Status, out.Message = "message_received", &mi
	}
	return out, nil
}

func (d *Daemon) broadcast(r req, in api.BroadcastRequest) (api.BroadcastResult, error) {
	br := hub.BroadcastRequest{Workspace: r.ws, From: r.agent, Content: in.Content, Priority: in.Priority}
	if f := in.Filter; f != nil {
		if f.Status != "" && f.Status != "all" && f.Status != "active" {
			return api.BroadcastResult{}, hub.Errorf("broadcast", hub.Invalid, "invalid filter status %q: want all or active", f.Status)
		}
		br.ActiveOnly = f.Status == "active"
		br.Exclude = f.Exclude
	}
	res, err := d.hub.Broadcast(r.Context(), br)
	if err != nil {
		return api.BroadcastResult{}, err
	}
	return mcpserver.BroadcastResult(res), nil
}

func (d *Daemon) groups(r req, _ none) (api.ListGroupsResult, error) {
	gs, err := d.hub.Groups(r.Context(), r.ws)
	if err != nil {
		return api.ListGroupsResult{}, err
	}
	return mcpserver.ListGroups(gs), nil
}

func (d *Daemon) createGroup(r req, in api.GroupRequest) (api.GroupResult, error) {
	by := ""
	if r.agent != "" {
		if a, err := d.hub.Agent(r.Context(), r.ws, r.agent); err == nil {
			by = a.ID()
		}
	}
	g, err := d.hub.CreateGroup(r.Context(), r.ws, in.Name, in.Description, by)
	if err != nil {
		return api.GroupResult{}, err
	}
	return api.GroupResult{Status: "created", Name: g.Name}, nil
}

func (d *Daemon) group(r req, _ none) (api.GroupDetail, error) {
	return mcpserver.GroupDetail(r.Context(), d.hub, r.ws, r.PathValue("name"), r.URL.Query().Get("expand") == "true")
}

func (d *Daemon) deleteGroup(r req, _ none) (api.GroupResult, error) {
	return api.GroupResult{Status: "deleted", Name: r.PathValue("name")}, d.hub.DeleteGroup(r.Context(), r.ws, r.PathValue("name"))
}

func (d *Daemon) addMember(r req, in api.MemberRequest) (api.MemberResult, error) {
	return d.member(r, in, "added", d.hub.AddGroupMember)
}

func (d *Daemon) removeMember(r req, in api.MemberRequest) (api.MemberResult, error) {
	return d.member(r, in, "removed", d.hub.RemoveGroupMember)
}

func (d *Daemon) member(r req, in api.MemberRequest, status string, op func(ctx context.Context, ws, group string, m hub.Member) error) (api.MemberResult, error) {
	m, err := hub.ParseMember(in.MemberType, in.MemberID)
	if err == nil {
		err = op(r.Context(), r.ws, r.PathValue("name"), m)
	}
	return api.MemberResult{Status: status, Group: r.PathValue("name"), MemberType: in.MemberType, MemberID: in.MemberID}, err
}
