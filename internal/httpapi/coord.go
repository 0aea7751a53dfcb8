package httpapi

import (
	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/ops"
)

// coordRoutes adds the endpoints of file reservations, search and work queues.
func coordRoutes(mux Mux, o *ops.Ops) {
	r := api.Prefix + "/reservations"
	Handle(mux, "POST "+r, o.ReservePaths)
	Handle(mux, "GET "+r, o.ListReservations)
	Handle(mux, "POST "+r+"/renew", o.RenewReservations)
	Handle(mux, "POST "+r+"/release", o.ReleaseReservations)
	Handle(mux, "POST "+r+"/force-release", o.ForceRelease)
	Handle(mux, "GET "+r+"/who", o.WhoHas)
	Handle(mux, "POST "+r+"/check", o.CheckPaths)
	Handle(mux, "GET "+api.Prefix+"/search", o.SearchMessages)
	Handle(mux, "GET "+api.Prefix+"/queues/{queue}", o.Queue)
	Handle(mux, "POST "+api.Prefix+"/queues/{queue}/claim", o.ClaimTask)
	Handle(mux, "POST "+api.Prefix+"/tasks/{task_id}/complete", o.CompleteTask)
	Handle(mux, "POST "+api.Prefix+"/tasks/{task_id}/release", o.ReleaseTask)
}
