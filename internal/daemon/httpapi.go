package daemon

import (
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/httpapi"
	"github.com/parley-dev/parley/internal/hub"
)

func (d *Daemon) handler() http.Handler {
	mux := http.NewServeMux()
	d.access = httpapi.Routes(mux, d.ops, httpapi.Endpoints{MCP: d.mcp, Events: d.events})
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

// originList is the daemon's origins, for the event stream's handshake.
func (d *Daemon) originList() []string { return slices.Collect(maps.Keys(d.origins)) }

// process is the daemon's part of GET /api/v1/status (ops.Options.Process).
func (d *Daemon) process() api.Status {
	return api.Status{
		StartedAt: d.started.UTC(), Uptime: time.Since(d.started).Round(time.Second).String(),
		Home: d.paths.Home, Socket: d.paths.Socket, Store: d.storeKind, Database: d.storeDesc,
		Sessions: d.mcp.Sessions(), Profiles: d.mcp.Profiles(), Listen: d.TCPAddr(),
		TLS: d.tcp != nil && d.tcp.tls, ServerURL: d.serverURL(),
	}
}

// serverURL is where teammates reach this daemon: public_url, else the TCP
// listener (by this machine's name when it listens on every address).
func (d *Daemon) serverURL() string {
	if d.conf.PublicURL != "" {
		return strings.TrimSuffix(d.conf.PublicURL, "/")
	}
	if d.tcp == nil {
		return ""
	}
	host, port, _ := net.SplitHostPort(d.tcp.addr)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = d.host
	}
	e := *d.tcp
	e.addr = net.JoinHostPort(host, port)
	return e.URL()
}
