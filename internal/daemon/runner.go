package daemon

import (
	"context"
	"net/http"
	"strconv"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/config"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/runner"
)

// openRunner starts the managed-agent runner and registers the manager and
// self MCP profiles.
func (d *Daemon) openRunner(ctx context.Context, conf *config.Config) error {
	provs := map[string]runner.ProviderConfig{}
	for name, p := range conf.Providers {
		provs[name] = runner.ProviderConfig{Kind: p.Kind, Command: p.Command, Args: p.Args, Env: p.Env}
	}
	permTimeout, grace := conf.RunnerDurations()
	rn, err := runner.New(d.hub, d.db, runner.Options{
		Home: d.paths.Home, Providers: provs, PermissionTimeout: permTimeout, CancelGrace: grace,
		Logger: d.log.With("subsystem", "runner"),
	})
	if err != nil {
		return err
	}
	if err := rn.Start(ctx); err != nil {
		return err
	}
	d.runner = rn
	d.mcp.Register("manager", d.mcp.ManagerProfile(rn))
	d.mcp.Register("self", d.mcp.SelfProfile(rn))
	return nil
}

// Runner returns the daemon's managed-agent runner.
func (d *Daemon) Runner() *runner.Runner { return d.runner }

func (d *Daemon) runnerRoutes(mux *http.ServeMux) {
	p := api.Prefix + "/managed/agents"
	mux.HandleFunc("GET "+p, d.managedList)
	mux.HandleFunc("POST "+p, d.managedCreate)
	mux.HandleFunc("GET "+p+"/{id}", d.managedShow)
	mux.HandleFunc("POST "+p+"/{id}/prompt", d.managedPrompt)
	mux.HandleFunc("POST "+p+"/{id}/wait", d.managedWait)
	mux.HandleFunc("POST "+p+"/{id}/cancel", d.managedCancel)
	mux.HandleFunc("POST "+p+"/{id}/kill", d.managedKill)
	mux.HandleFunc("GET "+p+"/{id}/activity", d.managedActivity)
	mux.HandleFunc("PUT "+p+"/{id}/mode", d.managedMode)
	mux.HandleFunc("GET "+api.Prefix+"/permissions", d.permissions)
	mux.HandleFunc("POST "+api.Prefix+"/permissions/{id}", d.respondPermission)
}

// reply writes v, or the error.
func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (d *Daemon) managedList(w http.ResponseWriter, r *http.Request) {
	ws, _, err := caller(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	if r.URL.Query().Get("all") == "true" {
		ws = ""
	}
	as := d.runner.List(ws)
	reply(w, api.ManagedAgentsResult{Agents: as, Count: len(as)}, nil)
}

func (d *Daemon) managedCreate(w http.ResponseWriter, r *http.Request) {
	ws, _, err := caller(r)
	var req api.CreateManagedAgentRequest
	if err == nil {
		err = decode(w, r, &req)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	a, err := d.runner.Create(r.Context(), runner.CreateRequest{Workspace: ws, CreateManagedAgentRequest: req})
	reply(w, a, err)
}

func (d *Daemon) managedShow(w http.ResponseWriter, r *http.Request) {
	ws, _, err := caller(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	out, err := d.runner.Detail(r.Context(), ws, r.PathValue("id"), 10)
	reply(w, out, err)
}

func (d *Daemon) managedPrompt(w http.ResponseWriter, r *http.Request) {
	ws, _, err := caller(r)
	var req api.PromptRequest
	if err == nil {
		err = decode(w, r, &req)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	out, err := d.runner.Prompt(r.Context(), ws, r.PathValue("id"), req.Prompt)
	reply(w, out, err)
}

func (d *Daemon) managedWait(w http.ResponseWriter, r *http.Request) {
	ws, _, err := caller(r)
	var req api.WaitAgentRequest
	if err == nil {
		err = decode(w, r, &req)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	timeout, err := hub.ValidTimeout(req.Timeout)
	if err != nil {
		writeErr(w, err)
		return
	}
	out, err := d.runner.Wait(r.Context(), ws, r.PathValue("id"), timeout, 0, nil)
	reply(w, out, err)
}

func (d *Daemon) managedCancel(w http.ResponseWriter, r *http.Request) {
	ws, _, err := caller(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	out, err := d.runner.Cancel(r.Context(), ws, r.PathValue("id"))
	reply(w, out, err)
}

func (d *Daemon) managedKill(w http.ResponseWriter, r *http.Request) {
	ws, _, err := caller(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	out, err := d.runner.Kill(r.Context(), ws, r.PathValue("id"))
	reply(w, out, err)
}

func (d *Daemon) managedActivity(w http.ResponseWriter, r *http.Request) {
	ws, _, err := caller(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	q := r.URL.Query()
	offset, limit := -1, 0
	if v := q.Get("offset"); v != "" {
		if offset, err = strconv.Atoi(v); err != nil || offset < 0 {
			writeErr(w, hub.Errorf("activity", hub.Invalid, "invalid offset %q: want a number >= 0", v))
			return
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 0 {
			writeErr(w, hub.Errorf("activity", hub.Invalid, "invalid limit %q: want a number >= 0", v))
			return
		}
	}
	out, err := d.runner.Activity(r.Context(), ws, r.PathValue("id"), offset, limit)
	reply(w, out, err)
}

func (d *Daemon) managedMode(w http.ResponseWriter, r *http.Request) {
	ws, _, err := caller(r)
	var req api.ModeRequest
	if err == nil {
		err = decode(w, r, &req)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	out, err := d.runner.SetMode(r.Context(), ws, r.PathValue("id"), req.Mode)
	reply(w, out, err)
}

// permissions lists pending requests of the caller's workspace, or of every
// workspace with ?all=true.
func (d *Daemon) permissions(w http.ResponseWriter, r *http.Request) {
	ws, _, err := caller(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	if r.URL.Query().Get("all") == "true" {
		ws = ""
	}
	reply(w, api.PermissionsResult{Permissions: d.runner.Permissions(ws)}, nil)
}

// respondPermission answers a request by its id, in any workspace: ids are
// unique, and only the daemon's user reaches the socket.
func (d *Daemon) respondPermission(w http.ResponseWriter, r *http.Request) {
	var req api.PermissionDecision
	if err := decode(w, r, &req); err != nil {
		writeErr(w, err)
		return
	}
	by := req.By
	if by == "" {
		by = "api"
	}
	dec, err := runner.ParseDecision(req, by)
	if err == nil {
		err = d.runner.Respond("", r.PathValue("id"), dec)
	}
	reply(w, api.SuccessResult{Success: true}, err)
}
