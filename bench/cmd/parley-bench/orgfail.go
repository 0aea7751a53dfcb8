package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/client"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/store/postgres/pgtest"
)

// The org scenario's failure phases (issue 41), after daemon 0's kill and
// on the private cluster only: PostgreSQL restarts (down -org-restart),
// then goes away for -org-outage (longer than daemon_timeout), with every
// daemon alive and the senders sending on. Meanwhile each daemon's live
// event stream (as a dashboard's) is watched, and a work queue runs: tasks
// sent to queue:jobs, claimed by workers through their daemons (as `parley
// queue claim` does, no session), worked on for -org-work and completed.
// It reports, per surviving daemon, the acknowledged sends its stream never
// told (lost), told twice (duplicated) or told more than a second after
// the send's answer (late); and for the queue the tasks completed by two
// claimants (double executions: must be 0), the completes refused, the
// tasks lost; and when each daemon told of the outage and of its end.
var (
	flagOrgRestart = flag.Duration("org-restart", 4*time.Second, "org scenario: PostgreSQL is restarted after the kill, down this long (0: no restart)")
	flagOrgOutage  = flag.Duration("org-outage", 11*time.Second, "org scenario: then PostgreSQL goes away this long, longer than daemon_timeout (0: no outage)")
)

// lateAfter is when a told event counts as late; awayAfter, how long after
// the store's return a late one still counts as the absence's (away).
const (
	lateAfter = time.Second
	awayAfter = 5 * time.Second
)

// orgFail is what the failure phases saw.
type orgFail struct {
	cluster *pgtest.Cluster
	streams []*orgStream // by daemon
	// PostgreSQL's CPU across its restarts: what the postmasters that
	// stopped spent since pgFrom, and the running one's pid and its
	// CPU when counting began (pgFrom).
	pgSpent, pgFrom time.Duration
	pm              int

	mu         sync.Mutex
	tasks      map[string]time.Time // task id: when its send was answered
	claims     map[string]int       // task id: claims handed out
	done       map[string]int       // task id: completes accepted
	refused    int                  // completes refused (409)
	refusedWhy string               // one of their reasons
	restartAt  time.Time            // PostgreSQL stopped for the restart
	restartUp  time.Time            // and back
	outageAt   time.Time
	outageUp   time.Time
}

// orgStream is one daemon's live event stream as the run heard it.
type orgStream struct {
	mu     sync.Mutex
	heard  map[string]int       // message id: times told
	first  map[string]time.Time // message id: when first told
	store  []api.Event          // daemon.store events
	breaks int                  // times the stream ended and was opened again
}

// failRow is one surviving daemon's line.
type failRow struct {
	daemon                  int
	told, lost, dup, late   int
	lateOwn                 int // of the late, sends through this daemon itself
	lateElse                int // of the late, sends answered outside the store's absences
	lateMax                 time.Duration
	breaks                  int
	cutAfter, restoredAfter time.Duration // outage start -> "cut"; store back -> "restored"
	reclaimedSaid           bool          // it said it was taken for dead
}

// failResult is the phases' result.
type failResult struct {
	restart, outage                  time.Duration
	rows                             []failRow
	tasks, completed, reclaimedTasks int
	double, refused, lostTasks       int
	refusedWhy                       string
	deadOverOutage                   int // reclaim log lines after the restart began
}

func clientOf(d *daemon, ws, agent string) (*client.Client, error) {
	paths, err := home.Resolve(d.home)
	if err != nil {
		return nil, err
	}
	return client.New(paths).As(ws, agent), nil
}

// watch records daemon i's event stream until ctx ends, opening it again
// when it breaks (the count says how often).
func (f *orgFail) watch(ctx context.Context, d *daemon, ws string, s *orgStream) {
	c, err := clientOf(d, ws, "")
	if err != nil {
		return
	}
	for ctx.Err() == nil {
		st, err := c.Events(ctx, false, []string{"message.sent", "daemon.store"})
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		for {
			e, _, err := st.Next(ctx)
			if err != nil {
				break
			}
			now := time.Now()
			s.mu.Lock()
			if e.Kind == "daemon.store" {
				e.Time = now
				s.store = append(s.store, e)
			} else {
				if s.heard[e.ID] == 0 {
					s.first[e.ID] = now
				}
				s.heard[e.ID]++
			}
			s.mu.Unlock()
		}
		st.Close()
		if ctx.Err() == nil {
			s.mu.Lock()
			s.breaks++
			s.mu.Unlock()
		}
	}
}

// produce sends a task to queue:jobs every 200 ms from a random agent,
// through its daemon, until ctx ends.
func (f *orgFail) produce(ctx context.Context, r *orgRun, ws string) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		from := r.agents[rand.IntN(len(r.agents))]
		i := int(from.at.Load())
		if int(r.dead.Load()) == i {
			i = r.survivor(i)
		}
		c, err := clientOf(r.ds[i], ws, from.name)
		if err != nil {
			continue
		}
		res, err := c.Send(ctx, api.SendRequest{To: "queue:jobs", Content: fmt.Sprint("job ", n)})
		if err != nil {
			continue
		}
		f.mu.Lock()
		f.tasks[res.MessageID] = time.Now()
		f.mu.Unlock()
	}
}

// work is one worker: claim a task through its daemon, work on it, complete
// it (again while the store is away), until ctx ends.
func (f *orgFail) work(ctx context.Context, r *orgRun, ws, name string, at int) {
	backoff := 10 * time.Millisecond
	for ctx.Err() == nil {
		if int(r.dead.Load()) == at {
			at = r.survivor(at)
		}
		c, err := clientOf(r.ds[at], ws, name)
		if err != nil {
			return
		}
		secs := 5
		res, err := c.ClaimTask(ctx, api.ClaimTaskRequest{Queue: "jobs", Timeout: &secs})
		if err != nil || res.Task == nil {
			if err != nil {
				time.Sleep(backoff)
				backoff = min(2*backoff, 500*time.Millisecond)
			}
			continue
		}
		backoff = 10 * time.Millisecond
		id := res.Task.MessageID
		f.mu.Lock()
		f.claims[id]++
		f.mu.Unlock()
		select {
		case <-time.After(*flagOrgWork):
		case <-ctx.Done():
			return
		}
		for try := 0; ctx.Err() == nil; try++ {
			if int(r.dead.Load()) == at {
				at = r.survivor(at)
				if c, err = clientOf(r.ds[at], ws, name); err != nil {
					return
				}
			}
			_, err := c.CompleteTask(ctx, api.CompleteTaskRequest{TaskID: id, Result: "done by " + name, IdempotencyKey: name + "/" + id})
			if err == nil {
				f.mu.Lock()
				f.done[id]++
				f.mu.Unlock()
				break
			}
			if k := hub.KindOf(err); k == hub.Conflict || k == hub.NotFound || k == hub.Forbidden {
				f.mu.Lock()
				f.refused++
				f.refusedWhy = err.Error()
				f.mu.Unlock()
				break
			}
			time.Sleep(200 * time.Millisecond) // the store is away: complete once it is back
		}
	}
}

// phases restarts PostgreSQL, then takes it away for the outage, starting
// killAfter after start (the kill's reclaim done by then), each followed by
// settle for the daemons to carry on.
func (f *orgFail) phases(ctx context.Context, start time.Time, from, settle time.Duration) {
	sleepUntil := func(t time.Time) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Until(t)):
			return true
		}
	}
	down := func(d time.Duration, at, up *time.Time) {
		f.mu.Lock()
		*at = time.Now()
		f.mu.Unlock()
		pg := pgCPU(f.pm)
		if err := f.cluster.Stop(); err != nil {
			logf("   stop PostgreSQL: %v", err)
		}
		sleepUntil(time.Now().Add(d))
		if err := f.cluster.Start(); err != nil {
			logf("   start PostgreSQL: %v", err)
		}
		pm := postmasterPID(f.cluster)
		f.mu.Lock()
		*up = time.Now()
		f.pgSpent += pg - f.pgFrom
		f.pm, f.pgFrom = pm, pgCPU(pm)
		f.mu.Unlock()
		logf("   PostgreSQL down %s (at %s)", up.Sub(*at).Round(time.Millisecond), at.Sub(start).Round(time.Millisecond))
	}
	if !sleepUntil(start.Add(from)) {
		return
	}
	if *flagOrgRestart > 0 {
		down(*flagOrgRestart, &f.restartAt, &f.restartUp)
		if !sleepUntil(time.Now().Add(settle)) {
			return
		}
	}
	if *flagOrgOutage > 0 {
		down(*flagOrgOutage, &f.outageAt, &f.outageUp)
	}
}

// away reports whether t falls in a restart or outage, from lateAfter
// before it (a send answered then may be told after it) until awayAfter
// past the store's return (the other daemons listen again meanwhile, and
// catch up what was sent before they did).
func (f *orgFail) away(t time.Time) bool {
	in := func(from, to time.Time) bool {
		return !from.IsZero() && !t.Before(from.Add(-lateAfter)) && !t.After(to.Add(awayAfter))
	}
	return in(f.restartAt, f.restartUp) || in(f.outageAt, f.outageUp)
}

// pgSince is PostgreSQL's CPU since counting began, across restarts.
func (f *orgFail) pgSince() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pgSpent + pgCPU(f.pm) - f.pgFrom
}

// phasesTake is how long the phases need after the kill.
func phasesTake(settle time.Duration) time.Duration {
	t := settle // the kill's reclaim
	if *flagOrgRestart > 0 {
		t += *flagOrgRestart + settle
	}
	if *flagOrgOutage > 0 {
		t += *flagOrgOutage + settle
	}
	return t
}

// missingTasks counts the tasks sent and not completed.
func (f *orgFail) missingTasks() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for id := range f.tasks {
		if f.done[id] == 0 {
			n++
		}
	}
	return n
}

// result counts what the phases saw, against the sends acknowledged.
func (f *orgFail) result(r *orgRun) failResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	res := failResult{restart: *flagOrgRestart, outage: *flagOrgOutage, tasks: len(f.tasks), refused: f.refused, refusedWhy: f.refusedWhy}
	for id := range f.tasks {
		switch {
		case f.done[id] == 0:
			res.lostTasks++
		case f.done[id] > 1:
			res.double++
		}
		if f.done[id] > 0 {
			res.completed++
		}
		if f.claims[id] > 1 {
			res.reclaimedTasks++
		}
	}
	r.mu.Lock()
	acked, via := r.ackAt, r.ackVia
	r.mu.Unlock()
	buckets := map[int]int{} // late sends by the second after the kill they were answered in
	defer func() {
		logf("   late events by the second after the kill their send was answered in: %v; restart at %s-%s, outage at %s-%s after the kill",
			buckets, f.restartAt.Sub(r.killed).Round(100*time.Millisecond), f.restartUp.Sub(r.killed).Round(100*time.Millisecond),
			f.outageAt.Sub(r.killed).Round(100*time.Millisecond), f.outageUp.Sub(r.killed).Round(100*time.Millisecond))
	}()
	for i, s := range f.streams {
		if i == 0 {
			continue // killed
		}
		s.mu.Lock()
		row := failRow{daemon: i, breaks: s.breaks}
		for id, at := range acked {
			n := s.heard[id]
			switch {
			case n == 0:
				row.lost++
				continue
			case n > 1:
				row.dup++
			}
			row.told++
			if late := s.first[id].Sub(at); late > lateAfter {
				row.late++
				row.lateMax = max(row.lateMax, late)
				if via[id] == i {
					row.lateOwn++
				}
				if !f.away(at) {
					row.lateElse++
				}
				buckets[int(at.Sub(r.killed).Seconds())]++
			}
		}
		for _, e := range s.store {
			switch {
			case e.Status == "cut" && !f.outageAt.IsZero() && e.Time.After(f.outageAt) && row.cutAfter == 0:
				row.cutAfter = e.Time.Sub(f.outageAt)
			case e.Status == "restored" && !f.outageUp.IsZero() && e.Time.After(f.outageUp) && row.restoredAfter == 0:
				row.restoredAfter = e.Time.Sub(f.outageUp)
			case e.Status == "reclaimed":
				row.reclaimedSaid = true
			}
		}
		s.mu.Unlock()
		res.rows = append(res.rows, row)
	}
	if !f.restartAt.IsZero() || !f.outageAt.IsZero() {
		from := f.restartAt
		if from.IsZero() {
			from = f.outageAt
		}
		res.deadOverOutage = reclaimsSince(r.ds[1:], from)
	}
	return res
}

// reclaimsSince counts the survivors' log lines that took a daemon for dead
// after t.
func reclaimsSince(ds []*daemon, t time.Time) int {
	n := 0
	for _, d := range ds {
		for _, l := range reclaimLines(d) {
			if l.at.After(t) {
				n++
			}
		}
	}
	return n
}

func printFail(w io.Writer, rs []orgResult) {
	var any bool
	for _, r := range rs {
		any = any || r.fail != nil
	}
	if !any {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Failure phases (issue 41), after the kill: PostgreSQL restarted, then away longer than daemon_timeout; each surviving daemon's event stream (message.sent) against the acknowledged sends (late: told over %s after the send's answer), and a work queue (a task every 200 ms, claimed and completed by two workers a daemon):\n\n", lateAfter)
	fmt.Fprintln(w, "| daemons x agents | restart / outage | daemon | told | lost | duplicated | late (max) | of which its own sends | of which answered outside the store's absences (1 s before to 5 s after) | stream breaks | outage told (cut) after | restored after the store's return | said reclaimed |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range rs {
		if r.fail == nil {
			continue
		}
		for _, x := range r.fail.rows {
			fmt.Fprintf(w, "| %d x %d | %s / %s | %d | %d | %d | %d | %d (%s) | %d | %d | %d | %s | %s | %v |\n",
				r.daemons, r.agents, r.fail.restart, r.fail.outage, x.daemon, x.told, x.lost, x.dup, x.late, secs(x.lateMax), x.lateOwn, x.lateElse, x.breaks,
				secs(x.cutAfter), secs(x.restoredAfter), x.reclaimedSaid)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| daemons x agents | tasks | completed | double executions | claimed twice | completes refused | tasks lost | taken for dead over the restart and outage |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rs {
		if f := r.fail; f != nil {
			fmt.Fprintf(w, "| %d x %d | %d | %d | %d | %d | %d | %d | %d |\n", r.daemons, r.agents, f.tasks, f.completed, f.double, f.reclaimedTasks, f.refused, f.lostTasks, f.deadOverOutage)
		}
	}
	for _, r := range rs {
		if r.fail != nil && r.fail.refusedWhy != "" {
			fmt.Fprintf(w, "\n%d x %d: a refused complete said: %s\n", r.daemons, r.agents, strings.TrimSpace(r.fail.refusedWhy))
		}
	}
}

func secs(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}
