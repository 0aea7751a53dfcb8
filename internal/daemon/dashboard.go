package daemon

import (
	"encoding/json"
	"net"
	"net/http"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/httpapi"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/web"
)

// openDashboard prepares the dashboard over the API handler h. Its loopback
// listener starts with the first login link (parley dashboard).
func (d *Daemon) openDashboard(h http.Handler) {
	d.web = web.New(web.Options{API: h, Logger: d.log.With("subsystem", "dashboard"), BaseContext: d.srv.BaseContext})
}

func (d *Daemon) dashboardRoutes(mux *http.ServeMux) {
	p := api.Prefix + "/dashboard"
	mux.HandleFunc("POST "+p+"/login", d.dashboardLogin)
	httpapi.Handle(mux, "GET "+p+"/unread", d.ops.UnreadByAgent)
	httpapi.Handle(mux, "GET "+p+"/search", d.ops.SearchWorkspace)
	httpapi.Handle(mux, "GET "+p+"/deliveries", d.ops.Deliveries)
}

// dashboardLogin mints a one-time sign-in link. Only the Unix socket serves
// it: the socket is the OS user's own, while a TCP token may be an agent's,
// and a browser session must not mint another.
func (d *Daemon) dashboardLogin(w http.ResponseWriter, r *http.Request) {
	l, err := d.login(r)
	if err != nil {
		writeAPI(w, api.HTTPStatus(hub.KindOf(err)), api.NewErrorBody(err))
		return
	}
	writeAPI(w, http.StatusOK, l)
}

func (d *Daemon) login(r *http.Request) (api.DashboardLogin, error) {
	const op = "dashboard login"
	if a, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr); a == nil || a.Network() != "unix" {
		return api.DashboardLogin{}, hub.Errorf(op, hub.Forbidden, "only the daemon's Unix socket issues dashboard sign-in links: run `parley dashboard` on this machine")
	}
	var in api.DashboardLoginRequest
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return api.DashboardLogin{}, hub.Errorf(op, hub.Invalid, "invalid JSON body: %v", err)
	}
	url, exp, err := d.web.Login(in.User)
	if err != nil {
		return api.DashboardLogin{}, hub.Errorf("", hub.KindOf(err), "%v", err)
	}
	return api.DashboardLogin{URL: url, Addr: d.web.Addr(), User: in.User, Expires: exp.UTC()}, nil
}

func writeAPI(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
