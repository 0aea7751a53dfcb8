package daemon

import (
	"net"
	"net/http"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/web"
)

// openDashboard prepares the dashboard over the API handler h. Its loopback
// listener starts with the first login link (parley dashboard).
func (d *Daemon) openDashboard(h http.Handler) {
	d.web = web.New(web.Options{API: h, Logger: d.log.With("subsystem", "dashboard"), BaseContext: d.srv.BaseContext})
}

// Dashboard returns the daemon's dashboard.
func (d *Daemon) Dashboard() *web.Server { return d.web }

func (d *Daemon) dashboardRoutes(mux *http.ServeMux) {
	mux.Handle("POST "+api.Prefix+"/dashboard/login", endpoint(false, d.dashboardLogin))
}

// dashboardLogin mints a one-time sign-in link. Only the Unix socket serves
// it: the socket is the OS user's own, while a TCP token may be an agent's,
// and a browser session must not be minted from a browser session.
func (d *Daemon) dashboardLogin(r req, in api.DashboardLoginRequest) (api.DashboardLogin, error) {
	if a, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr); a == nil || a.Network() != "unix" {
		return api.DashboardLogin{}, hub.Errorf("dashboard login", hub.Forbidden, "only the daemon's Unix socket issues dashboard sign-in links: run `parley dashboard` on this machine")
	}
	url, exp, err := d.web.Login(in.User)
	if err != nil {
		return api.DashboardLogin{}, hub.Errorf("", hub.KindOf(err), "%v", err)
	}
	return api.DashboardLogin{URL: url, Addr: d.web.Addr(), User: in.User, Expires: exp.UTC()}, nil
}
