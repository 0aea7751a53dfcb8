package daemon

import (
	"net/http"
	"path/filepath"
	"time"

	"github.com/parley-dev/parley/internal/web"
)

// openDashboard prepares the dashboard over the API handler h. Its loopback
// listener starts with the first login link (parley dashboard).
func (d *Daemon) openDashboard(h http.Handler) {
	d.web = web.New(web.Options{API: h, Logger: d.log.With("subsystem", "dashboard"), BaseContext: d.srv.BaseContext, Wrap: d.spare.wrap,
		Addr: d.conf.DashboardAddr, State: filepath.Join(d.paths.Home, "dashboard.json"), Admin: d.adminToken})
}

// resumeDashboard starts the dashboard's listener at once if browsers were
// signed in when the daemon last stopped: their pages reconnect to it.
func (d *Daemon) resumeDashboard() {
	if err := d.web.Resume(); err != nil {
		d.log.Warn("dashboard: resume the listener", "err", err)
	}
}

// dashboard is the web dashboard as the operations reach it. The dashboard
// serves the API built over the operations, so it opens after them.
type dashboard struct{ d *Daemon }

func (x dashboard) Login(user string) (string, time.Time, error) { return x.d.web.Login(user) }
func (x dashboard) Addr() string                                 { return x.d.web.Addr() }
func (x dashboard) SignOutAll() int                              { return x.d.web.SignOutAll() }
