package daemon

import (
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"

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
	mux.HandleFunc("POST "+api.Prefix+"/dashboard/login", d.dashboardLogin)
	mux.HandleFunc("GET "+api.Prefix+"/dashboard/unread", d.dashboardUnread)
	mux.HandleFunc("GET "+api.Prefix+"/dashboard/search", d.dashboardSearch)
	mux.HandleFunc("GET "+api.Prefix+"/dashboard/deliveries", d.dashboardDeliveries)
}

// maxDeliveryIDs bounds one deliveries request: a thread as the page shows it.
const maxDeliveryIDs = 500

// dashboardDeliveries reports where each recipient's copy of the messages
// ?ids=a,b,c stands (queued, delivered, redelivered, read, acked), as the
// person at the dashboard sees the whole workspace.
func (d *Daemon) dashboardDeliveries(w http.ResponseWriter, r *http.Request) {
	out, err := d.deliveries(r)
	if err != nil {
		writeAPI(w, api.HTTPStatus(hub.KindOf(err)), api.NewErrorBody(err))
		return
	}
	writeAPI(w, http.StatusOK, out)
}

func (d *Daemon) deliveries(r *http.Request) (api.DeliveriesResult, error) {
	const op = "deliveries"
	ws := r.Header.Get(api.HeaderWorkspace)
	if ws == "" {
		ws = r.URL.Query().Get("workspace")
	}
	if err := hub.ValidWorkspace(ws); err != nil {
		return api.DeliveriesResult{}, err
	}
	ids := strings.Split(r.URL.Query().Get("ids"), ",")
	if len(ids) > maxDeliveryIDs {
		return api.DeliveriesResult{}, hub.Errorf(op, hub.Invalid, "%d ids: at most %d at once", len(ids), maxDeliveryIDs)
	}
	out := api.DeliveriesResult{Deliveries: map[string][]api.DeliveryInfo{}}
	for _, id := range ids {
		if id == "" {
			continue
		}
		st, err := d.hub.MessageStatus(r.Context(), ws, "", id)
		if err != nil {
			return api.DeliveriesResult{}, err
		}
		ds := []api.DeliveryInfo{}
		for _, dl := range st.Deliveries {
			ds = append(ds, api.DeliveryInfo{Recipient: dl.Recipient, State: string(dl.State), Count: dl.Count,
				ReadAt: api.FormatTime(dl.ReadAt), AckedAt: api.FormatTime(dl.AckedAt)})
		}
		out.Deliveries[id] = ds
	}
	return out, nil
}

// dashboardSearch finds messages of a workspace by words, as a person sees
// it: the whole workspace, not one agent's mail.
func (d *Daemon) dashboardSearch(w http.ResponseWriter, r *http.Request) {
	out, err := d.search(r)
	if err != nil {
		writeAPI(w, api.HTTPStatus(hub.KindOf(err)), api.NewErrorBody(err))
		return
	}
	writeAPI(w, http.StatusOK, out)
}

func (d *Daemon) search(r *http.Request) (api.DashboardSearchResult, error) {
	q := r.URL.Query()
	ws := r.Header.Get(api.HeaderWorkspace)
	if ws == "" {
		ws = q.Get("workspace")
	}
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return api.DashboardSearchResult{}, hub.Errorf("search", hub.Invalid, "invalid limit %q: want a number", v)
		}
		limit = n
	}
	hits, err := d.hub.Search(r.Context(), hub.SearchRequest{Workspace: ws, Query: q.Get("q"), From: q.Get("from"), Limit: limit})
	if err != nil {
		return api.DashboardSearchResult{}, err
	}
	out := api.DashboardSearchResult{Hits: []api.DashboardSearchHit{}}
	for _, h := range hits {
		m := h.Message
		out.Hits = append(out.Hits, api.DashboardSearchHit{MessageID: m.ID, ThreadID: m.ThreadID, From: m.From, To: m.To,
			Priority: string(m.Priority), Timestamp: api.FormatTime(m.CreatedAt), Snippet: h.Snippet})
	}
	return out, nil
}

// dashboardUnread counts the unread messages of every agent of a workspace,
// and of the caller (the person at the dashboard), for the agent roster.
func (d *Daemon) dashboardUnread(w http.ResponseWriter, r *http.Request) {
	out, err := d.unread(r)
	if err != nil {
		writeAPI(w, api.HTTPStatus(hub.KindOf(err)), api.NewErrorBody(err))
		return
	}
	writeAPI(w, http.StatusOK, out)
}

func (d *Daemon) unread(r *http.Request) (api.UnreadResult, error) {
	ws := r.Header.Get(api.HeaderWorkspace)
	if ws == "" {
		ws = r.URL.Query().Get("workspace")
	}
	if err := hub.ValidWorkspace(ws); err != nil {
		return api.UnreadResult{}, err
	}
	as, err := d.hub.Agents(r.Context(), ws)
	if err != nil {
		return api.UnreadResult{}, err
	}
	out := api.UnreadResult{Workspace: ws, Unread: map[string]int{}}
	names := make([]string, 0, len(as)+1)
	for _, a := range as {
		names = append(names, a.Name)
	}
	if me := r.Header.Get(api.HeaderAgent); me != "" {
		names = append(names, me)
	}
	for _, n := range names {
		c, err := d.hub.Unread(r.Context(), ws, n)
		if err != nil {
			return api.UnreadResult{}, err
		}
		out.Unread[n] = c
	}
	return out, nil
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
