package httpapi

import (
	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/ops"
)

// dashboardRoutes adds the endpoints only the dashboard uses: its sign-in
// links and its reads of the whole workspace.
func dashboardRoutes(mux Mux, o *ops.Ops) {
	p := api.Prefix + "/dashboard"
	Handle(mux, "POST "+p+"/login", o.DashboardLogin)
	Handle(mux, "GET "+p+"/unread", o.UnreadByAgent)
	Handle(mux, "GET "+p+"/search", o.SearchWorkspace)
	Handle(mux, "GET "+p+"/deliveries", o.Deliveries)
}
