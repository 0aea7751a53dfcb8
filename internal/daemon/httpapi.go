package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
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
	mux.HandleFunc("GET "+p+"/health", d.health)
	mux.HandleFunc("GET "+p+"/status", d.status)
	mux.HandleFunc("GET "+p+"/events", d.eventsStream)
	mux.HandleFunc("POST "+p+"/agents", d.join)
	mux.HandleFunc("GET "+p+"/agents", d.agents)
	mux.HandleFunc("GET "+p+"/agents/{name}", d.agent)
	mux.HandleFunc("PUT "+p+"/agents/{name}/status", d.setStatus)
	mux.HandleFunc("POST "+p+"/messages", d.send)
	mux.HandleFunc("GET "+p+"/messages", d.history)
	mux.HandleFunc("GET "+p+"/messages/{id}", d.message)
	mux.HandleFunc("GET "+p+"/inbox", d.peek)
	mux.HandleFunc("POST "+p+"/inbox/check", d.check)
	mux.HandleFunc("POST "+p+"/inbox/wait", d.wait)
	mux.HandleFunc("POST "+p+"/broadcast", d.broadcast)
	mux.HandleFunc("GET "+p+"/groups", d.groups)
	mux.HandleFunc("POST "+p+"/groups", d.createGroup)
	mux.HandleFunc("GET "+p+"/groups/{name}", d.group)
	mux.HandleFunc("DELETE "+p+"/groups/{name}", d.deleteGroup)
	mux.HandleFunc("POST "+p+"/groups/{name}/members", d.addMember)
	mux.HandleFunc("DELETE "+p+"/groups/{name}/members", d.removeMember)
	d.gatewayRoutes(mux)
	d.runnerRoutes(mux)
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

func (d *Daemon) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.Health{OK: true, PID: os.Getpid(), Version: d.cfg.Version})
}

func (d *Daemon) status(w http.ResponseWriter, r *http.Request) {
	wss, err := d.hub.Workspaces(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	if wss == nil {
		wss = []string{}
	}
	writeJSON(w, http.StatusOK, api.Status{
		PID: os.Getpid(), Version: d.cfg.Version, StartedAt: d.started.UTC(),
		Uptime: time.Since(d.started).Round(time.Second).String(),
		Home:   d.paths.Home, Socket: d.paths.Socket, Database: d.paths.DB,
		Workspaces: wss, Sessions: d.mcp.Sessions(), Listen: d.TCPAddr(),
	})
}

func (d *Daemon) join(w http.ResponseWriter, r *http.Request) {
	ws, _, err := caller(r)
	var req api.JoinRequest
	if err == nil {
		err = decode(w, r, &req)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	a, err := d.hub.Join(r.Context(), hub.JoinRequest{Workspace: ws, Name: req.Name, Role: req.Role, Module: req.Module})
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.Agent(hub.AgentView{Agent: a, Active: d.hub.Active(a)}))
}

func (d *Daemon) agents(w http.ResponseWriter, r *http.Request) {
	ws, _, err := caller(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	as, err := d.hub.Agents(r.Context(), ws)
	if err != nil {
		writeErr(w, err)
		return
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
	writeJSON(w, http.StatusOK, out)
}

func (d *Daemon) agent(w http.ResponseWriter, r *http.Request) {
	ws, _, err := caller(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	a, err := d.hub.Agent(r.Context(), ws, r.PathValue("name"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.Agent(hub.AgentView{Agent: a, Active: d.hub.Active(a)}))
}

func (d *Daemon) setStatus(w http.ResponseWriter, r *http.Request) {
	ws, _, err := caller(r)
	var req api.StatusRequest
	if err == nil {
		err = decode(w, r, &req)
	}
	if err == nil {
		err = d.hub.SetStatus(r.Context(), ws, r.PathValue("name"), hub.Status(req.Status))
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, req)
}

func (d *Daemon) send(w http.ResponseWriter, r *http.Request) {
	ws, agent, err := caller(r)
	var req api.SendRequest
	if err == nil {
		err = decode(w, r, &req)
	}
	if err == nil {
		err = needAgent(agent)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	res, err := d.hub.Send(r.Context(), hub.SendRequest{Workspace: ws, From: agent, To: req.To, Content: req.Content,
		Payload: req.Payload, Priority: req.Priority, ReplyTo: req.ReplyTo, Metadata: req.Metadata})
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.SendResult{Status: "delivered", MessageID: res.Message.ID,
		RecipientStatus: "", Recipients: res.Recipients, ThreadID: res.Message.ThreadID})
}

func (d *Daemon) history(w http.ResponseWriter, r *http.Request) {
	ws, _, err := caller(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	ms, err := d.hub.History(r.Context(), ws, hub.HistoryQuery{Thread: q.Get("thread"), Agent: q.Get("with"), Limit: limit})
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.HistoryResult{Messages: api.Messages(ms)})
}

func (d *Daemon) message(w http.ResponseWriter, r *http.Request) {
	ws, _, err := caller(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	m, err := d.hub.Message(r.Context(), ws, r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.Message(m))
}

func (d *Daemon) peek(w http.ResponseWriter, r *http.Request) {
	ws, agent, err := caller(r)
	if err == nil {
		err = needAgent(agent)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	ms, n, err := d.hub.Peek(r.Context(), ws, agent, limit)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, checkResult(ms, n-len(ms)))
}

func checkResult(ms []*hub.Message, remaining int) api.CheckResult {
	out := api.CheckResult{Status: "empty", Messages: api.Messages(ms), Remaining: max(remaining, 0)}
	if len(ms) > 0 {
		out.Status = "messages"
	}
	return out
}

func (d *Daemon) check(w http.ResponseWriter, r *http.Request) {
	ws, agent, err := caller(r)
	var req api.CheckRequest
	if err == nil {
		err = decode(w, r, &req)
	}
	if err == nil {
		err = needAgent(agent)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	ms, remaining, err := d.hub.Check(r.Context(), ws, agent, req.Limit)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, checkResult(ms, remaining))
}

func (d *Daemon) wait(w http.ResponseWriter, r *http.Request) {
	ws, agent, err := caller(r)
	var req api.WaitRequest
	if err == nil {
		err = decode(w, r, &req)
	}
	if err == nil {
		err = needAgent(agent)
	}
	var timeout time.Duration
	if err == nil {
		timeout, err = hub.ValidTimeout(req.Timeout)
	}
	var filter hub.PriorityFilter
	if err == nil {
		filter, err = hub.ParsePriorityFilter(req.PriorityFilter)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	start := time.Now()
	m, err := d.hub.Wait(r.Context(), hub.WaitRequest{Workspace: ws, Agent: agent, Timeout: timeout, Filter: filter})
	if err != nil {
		writeErr(w, err)
		return
	}
	out := api.WaitResult{Status: "timeout", WaitedSeconds: int(time.Since(start).Seconds())}
	if m != nil {
		mi := api.Message(m)
		out.Status, out.Message = "message_received", &mi
	}
	writeJSON(w, http.StatusOK, out)
}

func (d *Daemon) broadcast(w http.ResponseWriter, r *http.Request) {
	ws, agent, err := caller(r)
	var req api.BroadcastRequest
	if err == nil {
		err = decode(w, r, &req)
	}
	if err == nil {
		err = needAgent(agent)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	br := hub.BroadcastRequest{Workspace: ws, From: agent, Content: req.Content, Priority: req.Priority}
	if f := req.Filter; f != nil {
		br.ActiveOnly = f.Status == "active"
		br.Exclude = f.Exclude
		if f.Status != "" && f.Status != "all" && f.Status != "active" {
			writeErr(w, hub.Errorf("broadcast", hub.Invalid, "invalid filter status %q: want all or active", f.Status))
			return
		}
	}
	res, err := d.hub.Broadcast(r.Context(), br)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, mcpserver.BroadcastResult(res))
}

func (d *Daemon) groups(w http.ResponseWriter, r *http.Request) {
	ws, _, err := caller(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	gs, err := d.hub.Groups(r.Context(), ws)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, mcpserver.ListGroups(gs))
}

func (d *Daemon) createGroup(w http.ResponseWriter, r *http.Request) {
	ws, agent, err := caller(r)
	var req api.GroupRequest
	if err == nil {
		err = decode(w, r, &req)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	by := ""
	if agent != "" {
		if a, err := d.hub.Agent(r.Context(), ws, agent); err == nil {
			by = a.ID()
		}
	}
	g, err := d.hub.CreateGroup(r.Context(), ws, req.Name, req.Description, by)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.GroupResult{Status: "created", Name: g.Name})
}

func (d *Daemon) group(w http.ResponseWriter, r *http.Request) {
	ws, _, err := caller(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	g, err := mcpserver.GroupDetail(r.Context(), d.hub, ws, r.PathValue("name"), r.URL.Query().Get("expand") == "true")
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, g)
}

func (d *Daemon) deleteGroup(w http.ResponseWriter, r *http.Request) {
	ws, _, err := caller(r)
	if err == nil {
		err = d.hub.DeleteGroup(r.Context(), ws, r.PathValue("name"))
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.GroupResult{Status: "deleted", Name: r.PathValue("name")})
}

func (d *Daemon) addMember(w http.ResponseWriter, r *http.Request) {
	d.member(w, r, "added", d.hub.AddGroupMember)
}

func (d *Daemon) removeMember(w http.ResponseWriter, r *http.Request) {
	d.member(w, r, "removed", d.hub.RemoveGroupMember)
}

func (d *Daemon) member(w http.ResponseWriter, r *http.Request, status string, op func(ctx context.Context, ws, group string, m hub.Member) error) {
	ws, _, err := caller(r)
	var req api.MemberRequest
	if err == nil {
		err = decode(w, r, &req)
	}
	var m hub.Member
	if err == nil {
		m, err = hub.ParseMember(req.MemberType, req.MemberID)
	}
	if err == nil {
		err = op(r.Context(), ws, r.PathValue("name"), m)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.MemberResult{Status: status, Group: r.PathValue("name"), MemberType: req.MemberType, MemberID: req.MemberID})
}
