package daemon

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/config"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/permission"
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
	d.perms = permission.New(d.db, &permission.Options{Timeout: permTimeout, Logger: d.log.With("subsystem", "permissions")})
	d.perms.Subscribe(d.observePermission)
	rn, err := runner.New(d.hub, d.db, runner.Options{
		Home: d.paths.Home, Providers: provs, PermissionTimeout: permTimeout, CancelGrace: grace,
		Permissions: d.perms, Logger: d.log.With("subsystem", "runner"), Observer: d.observeRunner,
		// The person who runs the daemon hears of loops of agents that have
		// no owner of their own.
		Owner:       hub.HumanPrefix + api.OSUserName(),
		MaxAutoHops: conf.MaxAutoHops, AutoTurnsPerMinute: conf.AutoTurnsPerMinute,
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
	mux.Handle("GET "+p, endpoint(false, d.managedList))
	mux.Handle("POST "+p, endpoint(false, d.managedCreate))
	mux.Handle("GET "+p+"/{id}", endpoint(false, d.managedShow))
	mux.Handle("POST "+p+"/{id}/prompt", endpoint(false, d.managedPrompt))
	mux.Handle("POST "+p+"/{id}/wait", endpoint(false, d.managedWait))
	mux.Handle("POST "+p+"/{id}/cancel", endpoint(false, d.managedCancel))
	mux.Handle("POST "+p+"/{id}/kill", endpoint(false, d.managedKill))
	mux.Handle("GET "+p+"/{id}/activity", endpoint(false, d.managedActivity))
	mux.Handle("PUT "+p+"/{id}/mode", endpoint(false, d.managedMode))
	mux.Handle("GET "+api.Prefix+"/permissions", endpoint(false, d.permissions))
	mux.Handle("POST "+api.Prefix+"/permissions", endpoint(true, d.askPermission))
	mux.Handle("POST "+api.Prefix+"/permissions/{id}", endpoint(false, d.respondPermission))
}

func (d *Daemon) managedList(r req, _ none) (api.ManagedAgentsResult, error) {
	ws := r.ws
	if r.URL.Query().Get("all") == "true" {
		ws = ""
	}
	as := d.runner.List(ws)
	return api.ManagedAgentsResult{Agents: as, Count: len(as)}, nil
}

func (d *Daemon) managedCreate(r req, in api.CreateManagedAgentRequest) (any, error) {
	return d.runner.Create(r.Context(), runner.CreateRequest{Workspace: r.ws, CreateManagedAgentRequest: in})
}

func (d *Daemon) managedShow(r req, _ none) (any, error) {
	return d.runner.Detail(r.Context(), r.ws, r.PathValue("id"), 10)
}

func (d *Daemon) managedPrompt(r req, in api.PromptRequest) (any, error) {
	return d.runner.Prompt(r.Context(), r.ws, r.PathValue("id"), in.Prompt)
}

func (d *Daemon) managedWait(r req, in api.WaitAgentRequest) (any, error) {
	timeout, err := hub.ValidTimeout(in.Timeout)
	if err != nil {
		return nil, err
	}
	return d.runner.Wait(r.Context(), r.ws, r.PathValue("id"), timeout, 0, nil)
}

func (d *Daemon) managedCancel(r req, _ none) (any, error) {
	return d.runner.Cancel(r.Context(), r.ws, r.PathValue("id"))
}

func (d *Daemon) managedKill(r req, _ none) (any, error) {
	return d.runner.Kill(r.Context(), r.ws, r.PathValue("id"))
}

func (d *Daemon) managedActivity(r req, _ none) (any, error) {
	q := r.URL.Query()
	offset, limit := -1, 0
	var err error
	if v := q.Get("offset"); v != "" {
		if offset, err = strconv.Atoi(v); err != nil || offset < 0 {
			return nil, hub.Errorf("activity", hub.Invalid, "invalid offset %q: want a number >= 0", v)
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 0 {
			return nil, hub.Errorf("activity", hub.Invalid, "invalid limit %q: want a number >= 0", v)
		}
	}
	return d.runner.Activity(r.Context(), r.ws, r.PathValue("id"), offset, limit)
}

func (d *Daemon) managedMode(r req, in api.ModeRequest) (any, error) {
	return d.runner.SetMode(r.Context(), r.ws, r.PathValue("id"), in.Mode)
}

// permissions lists pending requests of the caller's workspace, or of every
// workspace with ?all=true.
func (d *Daemon) permissions(r req, _ none) (api.PermissionsResult, error) {
	ws := r.ws
	if r.URL.Query().Get("all") == "true" {
		ws = ""
	}
	return api.PermissionsResult{Permissions: d.runner.Permissions(ws)}, nil
}

// respondPermission answers a request by its id, in any workspace: ids are
// unique, and only the daemon's user reaches the socket.
func (d *Daemon) respondPermission(r req, in api.PermissionDecision) (api.SuccessResult, error) {
	by := in.By
	if by == "" {
		by = "api"
	}
	dec, err := runner.ParseDecision(in, by)
	if err == nil {
		err = d.runner.Respond("", r.PathValue("id"), dec)
	}
	return api.SuccessResult{Success: true}, err
}

// DefaultAskWait is how long POST /api/v1/permissions waits for a decision
// by default: under Claude Code's default hook timeout (60 s).
const DefaultAskWait = 50 * time.Second

// askPermission files a request of the calling agent (a hook, a channel
// relay) and waits for the first decision, or closes it as expired so that
// the client falls back to its own prompt.
func (d *Daemon) askPermission(r req, in api.AskPermissionRequest) (api.PermissionOutcome, error) {
	switch in.Source {
	case "":
		in.Source = "api"
	case permission.SourceClaudeHook, permission.SourceCodexHook, permission.SourceChannel:
	default:
		return api.PermissionOutcome{}, hub.Errorf("request_permission", hub.Invalid, "invalid source %q: want claude-hook, codex-hook or channel", in.Source)
	}
	wait := DefaultAskWait
	if in.Wait != 0 {
		var err error
		if wait, err = hub.ValidTimeout(in.Wait); err != nil {
			return api.PermissionOutcome{}, err
		}
	}
	got, err := d.perms.Ask(r.Context(), permission.Request{Workspace: r.ws, Agent: r.agent, Source: in.Source, Tool: in.ToolName,
		Input: in.Input, ToolUseID: in.ToolUseID, Description: in.Description}, wait)
	if err != nil {
		return api.PermissionOutcome{}, err
	}
	return PermissionOutcome(got), nil
}

// PermissionOutcome is a request's outcome as the API shows it.
func PermissionOutcome(p *permission.Request) api.PermissionOutcome {
	out := api.PermissionOutcome{Permission: runner.PermissionView(p), State: string(p.State)}
	if d := p.Decision; d != nil {
		out.Message, out.By = d.Message, d.By
		if p.State == permission.Allowed || p.State == permission.Denied {
			out.Behavior, out.UpdatedInput = d.Behavior(), d.UpdatedInput
		}
	}
	return out
}
