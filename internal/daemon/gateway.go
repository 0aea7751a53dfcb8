package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/config"
	"github.com/parley-dev/parley/internal/gateway"
	"github.com/parley-dev/parley/internal/httpapi"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/mcpserver"
	"github.com/parley-dev/parley/internal/ops"
)

// configPoll is how often the daemon looks for a changed config.toml.
const configPoll = time.Second

// gatewayState is the daemon's side of the gateway: the manager and what it
// knows of config.toml, to reload it when it changes.
type gatewayState struct {
	mgr *gateway.Manager

	mu    sync.Mutex // serializes reloads
	stamp fileStamp  // config.toml as last read
}

type fileStamp struct {
	mod  time.Time
	size int64
	ok   bool
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), ok: true}
}

// openGateway starts the upstreams of conf and registers the gateway profile.
func (d *Daemon) openGateway(conf *config.Config) {
	d.gw = &gatewayState{
		mgr:   gateway.New(&gateway.Options{Logger: d.log.With("subsystem", "gateway"), Version: d.cfg.Version}),
		stamp: stampOf(d.paths.Config),
	}
	d.mcp.Register("gateway", mcpserver.Profile{Attach: d.gw.mgr.Profile})
	d.gw.mgr.Apply(conf.Upstreams)
}

// Reload reads config.toml again and applies its upstreams; other settings
// take effect at the next start. A file that does not parse changes nothing.
func (d *Daemon) Reload() error {
	d.gw.mu.Lock()
	defer d.gw.mu.Unlock()
	st := stampOf(d.paths.Config)
	conf, err := config.Load(d.paths.Config)
	if err != nil {
		d.gw.stamp = st // do not retry a bad file every second
		return hub.Errorf("reload", hub.Invalid, "%v (nothing changed)", err)
	}
	d.gw.stamp = st
	d.gw.mgr.Apply(conf.Upstreams)
	d.log.Info("config reloaded", "upstreams", len(conf.Upstreams))
	return nil
}

// watchConfig reloads config.toml when its modification time or size changes.
func (d *Daemon) watchConfig(ctx context.Context) {
	t := time.NewTicker(configPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.gw.mu.Lock()
		changed := stampOf(d.paths.Config) != d.gw.stamp
		d.gw.mu.Unlock()
		if !changed {
			continue
		}
		if err := d.Reload(); err != nil {
			d.log.Error("config.toml changed but cannot be used", "err", err)
		}
	}
}

func (d *Daemon) gatewayRoutes(mux *http.ServeMux) {
	p := api.Prefix
	mux.HandleFunc("POST "+p+"/reload", d.reload)
	mux.HandleFunc("GET "+p+"/upstreams", d.upstreams)
	mux.HandleFunc("GET "+p+"/tools", d.tools)
	mux.HandleFunc("POST "+p+"/tools/call", d.callTool)
}

func (d *Daemon) reload(w http.ResponseWriter, r *http.Request) {
	if err := d.Reload(); err != nil {
		httpapi.WriteError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, api.ReloadResult{Upstreams: ops.Upstreams(d.gw.mgr.Status())})
}

func (d *Daemon) upstreams(w http.ResponseWriter, r *http.Request) {
	httpapi.WriteJSON(w, http.StatusOK, api.UpstreamsResult{Upstreams: ops.Upstreams(d.gw.mgr.Status())})
}

func (d *Daemon) tools(w http.ResponseWriter, r *http.Request) {
	server := r.URL.Query().Get("server")
	if server != "" {
		if err := config.ValidUpstreamName(server); err != nil {
			httpapi.WriteError(w, hub.Errorf("tools", hub.Invalid, "%v", err))
			return
		}
	}
	out := api.ToolsResult{Tools: []json.RawMessage{}}
	for _, t := range d.gw.mgr.Tools(server) {
		b, err := json.Marshal(t)
		if err != nil {
			httpapi.WriteError(w, err)
			return
		}
		out.Tools = append(out.Tools, b)
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

func (d *Daemon) callTool(w http.ResponseWriter, r *http.Request) {
	var req api.CallToolRequest
	if err := httpapi.Decode(w, r, &req); err != nil {
		httpapi.WriteError(w, err)
		return
	}
	res, err := d.gw.mgr.Call(r.Context(), req.Name, req.Arguments)
	if err != nil {
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			// The upstream refused the request: its message is for the user.
			err = hub.Errorf("", hub.Invalid, "the upstream answered with error %d: %s", je.Code, je.Message)
		}
		httpapi.WriteError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, res)
}
