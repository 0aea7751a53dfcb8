package daemon

import (
	"context"
	"net/http"
	"os"
	"runtime"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/httpapi"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/ops"
)

func (d *Daemon) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", d.mcp)
	p := api.Prefix
	httpapi.Handle(mux, "GET "+p+"/health", d.health)
	httpapi.Handle(mux, "GET "+p+"/status", d.status)
	mux.HandleFunc("GET "+p+"/events", d.eventsStream)
	httpapi.Routes(mux, d.ops)
	return d.checkOrigin(mux)
}

// checkOrigin refuses browser requests from origins the daemon did not issue:
// a web page must never drive the bus through a user's browser.
func (d *Daemon) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !d.origins[o] {
			httpapi.WriteError(w, hub.Errorf("http", hub.Forbidden, "cross-origin request from %q refused", o))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (d *Daemon) health(_ context.Context, _ *ops.Caller, _ api.Empty) (api.Health, error) {
	return api.Health{OK: true, PID: os.Getpid(), Version: d.cfg.Version}, nil
}

func (d *Daemon) status(ctx context.Context, _ *ops.Caller, _ api.Empty) (api.Status, error) {
	wss, err := d.hub.Workspaces(ctx)
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
		Workspaces: wss, Sessions: d.mcp.Sessions(), Profiles: d.mcp.Profiles(), Listen: d.TCPAddr(), Goroutines: runtime.NumGoroutine(),
	}
	return st, nil
}
