package daemon

import (
	"net/http"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/httpapi"
	"github.com/parley-dev/parley/internal/hub"
)

func (d *Daemon) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", d.mcp)
	p := api.Prefix
	mux.HandleFunc("GET "+p+"/events", d.eventsStream)
	httpapi.Routes(mux, d.ops)
	d.mux = mux
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

// process is the daemon's part of GET /api/v1/status (ops.Options.Process).
func (d *Daemon) process() api.Status {
	return api.Status{
		StartedAt: d.started.UTC(), Uptime: time.Since(d.started).Round(time.Second).String(),
		Home: d.paths.Home, Socket: d.paths.Socket, Store: d.storeKind, Database: d.storeDesc,
		Sessions: d.mcp.Sessions(), Profiles: d.mcp.Profiles(), Listen: d.TCPAddr(),
	}
}
