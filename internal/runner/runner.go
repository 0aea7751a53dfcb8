// Package runner supervises the agents the daemon launches: it turns prompts
// into provider runs (Claude Code, Codex, any command), records their output as
// an activity timeline, queues prompts, cancels and kills runs with their
// process groups, brokers permission requests, and wakes idle agents when
// messages arrive for them. State lives in a Store (SQLite, in the daemon), so
// agents and timelines survive restarts. The daemon imports it, and
// ops calls it for the manager and self tools and the /api/v1/managed
// endpoints. It returns its own types; ops maps them to wire types. It
// imports hub and permission, and no wire package.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/permission"
)

// Defaults.
const (
	DefaultPermissionTimeout = 10 * time.Minute
	DefaultCancelGrace       = 5 * time.Second
	// MaxPrompt bounds one prompt.
	MaxPrompt = 1 << 20
	// wakeBatch is how many messages one wake-up turn carries at most.
	wakeBatch = 20
)

// Options configure a Runner; zero values mean defaults.
type Options struct {
	Home              string // PARLEY_HOME: agents/<id>/ and worktrees/<id>/ go there
	Exe               string // the parley executable the agents' MCP servers run
	Providers         map[string]ProviderConfig
	PermissionTimeout time.Duration
	CancelGrace       time.Duration
	// Permissions is the daemon's permission inbox, where managed agents'
	// requests go; nil makes one over the runner's store.
	Permissions *permission.Inbox
	Logger      *slog.Logger
	// Owner is told when auto-wake stops a loop of an agent that has no
	// owner of its own: an agent name or human:NAME; empty tells no one.
	Owner string
	// MaxAutoHops and AutoTurnsPerMinute bound auto-wake (wake.go); zero
	// means DefaultMaxAutoHops and DefaultAutoTurnsPerMinute.
	MaxAutoHops        int
	AutoTurnsPerMinute int
	// WorkspaceMaxCost caps what the managed agents of one workspace may
	// cost together, in USD (0: no cap); MaxLaunches bounds how many agents
	// one managed agent may create (0: DefaultMaxLaunches). See budget.go.
	WorkspaceMaxCost float64
	MaxLaunches      int
	// Observer, if set, hears of every change of a managed agent: each new
	// timeline event, and each change of its status. It runs on the
	// runner's goroutines, some holding its lock: it must neither block
	// nor call the runner (the dashboard's event stream and push
	// notifications hand off to queues).
	Observer func(Change)
}

// Change is what an Observer hears: a new timeline event of an agent (Event
// set), or a new status (Event nil).
type Change struct {
	Workspace string
	Agent     string
	Status    Status
	Event     *Event
}

// Runner owns the managed agents of one daemon.
type Runner struct {
	hub   *hub.Hub
	store Store
	log   *slog.Logger
	opts  Options
	provs map[string]*provider

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	inbox *permission.Inbox

	mu     sync.Mutex
	agents map[string]*agent // by id
	closed bool

	wakeMu  sync.Mutex
	wakeSet map[string]bool // workspace\x00name of agents with new mail
	guard   wakeGuard       // loop protection (wake.go)
	wakeCh  chan struct{}
	unsub   func()
}

// agent is a managed agent's live state. Fields are guarded by Runner.mu,
// except that evMu orders its timeline and saveMu its writes to the store.
type agent struct {
	rec      Agent
	run      *active               // the run in progress
	queue    []*Run                // prompts waiting, oldest first
	lastRun  *Run                  // the latest run that ended
	finished int                   // the highest seq of a run that ended
	nextRun  int                   // seq of the last run made
	perms    []*permission.Request // pending, oldest first
	sess     *session              // a steerable provider's process, kept across runs
	changed  chan struct{}         // closed and replaced at every change
	observe  func(Change)          // Options.Observer, or nil
	observed Status                // the status last told to observe

	evMu      sync.Mutex
	nextEvent int64

	saveMu sync.Mutex
}

// active is a run whose process runs (or is about to).
type active struct {
	run  *Run
	pid  int    // process group id, once started
	stop string // why it is being stopped: cancel, kill or shutdown
	done chan struct{}

	// A run in a session (session.go): the session, once its turn is
	// sent; the runs streamed into its turn, in order; set once the turn
	// has ended, with how many of those it took in.
	sess    *session
	steered []*Run
	ending  bool
	took    int

	// clock stops the run when its agent's time budget runs out.
	clock *time.Timer
}

// steerable reports whether a prompt can be streamed into a's turn: it runs
// in a session and is neither ending nor being stopped. Call with r.mu held.
func (a *active) steerable() bool { return a.sess != nil && !a.ending && a.stop == "" }

// New returns a runner over h and store. Call Start before use.
func New(h *hub.Hub, store Store, opts Options) (*Runner, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.PermissionTimeout <= 0 {
		opts.PermissionTimeout = DefaultPermissionTimeout
	}
	if opts.CancelGrace <= 0 {
		opts.CancelGrace = DefaultCancelGrace
	}
	if opts.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("runner: find the parley executable: %w", err)
		}
		opts.Exe = exe
	}
	if opts.Permissions == nil {
		ps, ok := store.(permission.Store)
		if !ok {
			return nil, fmt.Errorf("runner: no permission inbox, and the store keeps no permissions")
		}
		opts.Permissions = permission.New(ps, &permission.Options{Timeout: opts.PermissionTimeout, Logger: opts.Logger})
	}
	provs, err := providers(opts.Providers)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Runner{
		hub: h, store: store, log: opts.Logger, opts: opts, provs: provs,
		ctx: ctx, cancel: cancel,
		agents: map[string]*agent{}, inbox: opts.Permissions,
		wakeSet: map[string]bool{}, wakeCh: make(chan struct{}, 1), guard: newWakeGuard(),
	}, nil
}

// Start loads the agents, marks runs that a dead daemon left running as
// interrupted, requeues waiting prompts, and starts listening for messages.
func (r *Runner) Start(ctx context.Context) error {
	recs, err := r.store.ManagedAgents(ctx)
	if err != nil {
		return fmt.Errorf("runner: load agents: %w", err)
	}
	for _, rec := range recs {
		st := &agent{rec: *rec, changed: make(chan struct{}), observe: r.opts.Observer}
		runs, err := r.store.Runs(ctx, rec.ID, 1)
		if err != nil {
			return fmt.Errorf("runner: load runs: %w", err)
		}
		if len(runs) > 0 {
			st.nextRun = runs[0].Seq
			if !runs[0].State.Open() {
				st.lastRun, st.finished = runs[0], runs[0].Seq
			}
		}
		_, n, err := r.store.Events(ctx, rec.ID, 0, 0)
		if err != nil {
			return fmt.Errorf("runner: load timeline: %w", err)
		}
		st.nextEvent = int64(n)
		r.agents[rec.ID] = st
	}
	open, err := r.store.OpenRuns(ctx)
	if err != nil {
		return fmt.Errorf("runner: load open runs: %w", err)
	}
	for _, run := range open {
		st := r.agents[run.AgentID]
		if st == nil {
			continue
		}
		switch {
		case run.State == RunRunning:
			killOrphans(run.PID, r.opts.Home, runMarker(run.AgentID, run.Seq), sessionMarker(run.AgentID))
			run.State, run.EndedAt = RunInterrupted, time.Now().UTC()
			run.Error = "the daemon stopped during this run"
			r.emit(st, &Event{Run: run.Seq, Kind: EvInterrupted, Text: "run " + fmt.Sprint(run.Seq) + " was interrupted: the daemon stopped while it ran", IsError: true})
			st.lastRun = run
			st.finished = max(st.finished, run.Seq)
			r.log.Info("run interrupted by a daemon restart", "agent", run.AgentID, "run", run.Seq)
		case st.rec.Exited:
			run.State, run.EndedAt, run.Error = RunCancelled, time.Now().UTC(), "the agent was killed"
			st.finished = max(st.finished, run.Seq)
		default:
			st.queue = append(st.queue, run)
			continue
		}
		if err := r.store.PutRun(ctx, run); err != nil {
			return fmt.Errorf("runner: save run: %w", err)
		}
	}
	r.unsub = r.hub.Subscribe(r.onHubEvent)
	r.wg.Add(1)
	go r.wakeLoop()
	r.mu.Lock()
	all := make([]*agent, 0, len(r.agents))
	for _, st := range r.agents {
		all = append(all, st)
	}
	r.mu.Unlock()
	for _, st := range all {
		r.dispatch(st)
		r.markWake(st.rec.Workspace, st.rec.ID)
	}
	return nil
}

// Close stops every run (SIGINT, then SIGKILL after the grace period), marks
// them interrupted, denies pending permission requests, and waits for the
// runner's goroutines. The store must stay open until Close returns.
func (r *Runner) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	var runs []*active
	for _, st := range r.agents {
		if st.run != nil {
			st.run.stop = "shutdown"
			runs = append(runs, st.run)
		}
	}
	r.mu.Unlock()
	if r.unsub != nil {
		r.unsub()
	}
	r.denyAll("", "the daemon is stopping")
	grace := min(r.opts.CancelGrace, 3*time.Second)
	for _, a := range runs {
		r.stopProcess(a, grace)
	}
	r.mu.Lock()
	var sessions []*session
	for _, st := range r.agents {
		if st.sess != nil {
			sessions = append(sessions, st.sess)
		}
	}
	r.mu.Unlock()
	for _, s := range sessions {
		// Its end of stdin ends it; a process that lingers is killed.
		t := time.AfterFunc(grace, s.kill)
		s.stdin.Close()
		<-s.exited
		t.Stop()
	}
	r.cancel()
	r.wg.Wait()
	return nil
}

// ---- create ----

// CreateRequest creates a managed agent.
type CreateRequest struct {
	Workspace string
	// Owner is who creates it (an agent name, or human:NAME): told when
	// auto-wake stops a loop of it.
	Owner    string
	Provider string // default claude
	Cwd      string // absolute
	Title    string // default: the prompt's first line
	Mode     string // default "default"
	Prompt   string // the first task, run at once
	Worktree bool   // run in a new git worktree of Cwd's repository
	Command  string // a command provider's shell command
	Name     string // the agent's id and bus name (default: a fresh id)
	Role     string // default agent
	AutoWake *bool  // default true
	// Budget bounds the agent (budget.go); unset bounds take the
	// provider's defaults.
	Budget Budget
}

// Create makes a managed agent in the workspace (and a git worktree for it
// when asked), registers it on the bus, and queues its first prompt.
func (r *Runner) Create(ctx context.Context, req CreateRequest) (*Snapshot, error) {
	const op = "create_agent"
	if err := hub.ValidWorkspace(req.Workspace); err != nil {
		return nil, err
	}
	provName := req.Provider
	if provName == "" {
		provName = KindClaude
	}
	p := r.provs[provName]
	if p == nil {
		return nil, hub.Errorf(op, hub.Invalid, "unknown provider %q: want %s", provName, strings.Join(r.ProviderNames(), ", "))
	}
	if req.Command != "" && p.Kind != KindCommand {
		return nil, hub.Errorf(op, hub.Invalid, "command is only for command providers; provider %s runs %s", provName, p.Command)
	}
	mode := modeOr(req.Mode)
	if err := ValidMode(mode); err != nil {
		return nil, err
	}
	if req.Cwd == "" || !filepath.IsAbs(req.Cwd) {
		return nil, hub.Errorf(op, hub.Invalid, "cwd must be an absolute directory path, got %q", req.Cwd)
	}
	cwd := filepath.Clean(req.Cwd)
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return nil, hub.Errorf(op, hub.Invalid, "cwd %s is not a directory", cwd)
	}
	if len(req.Prompt) > MaxPrompt {
		return nil, hub.Errorf(op, hub.TooLarge, "prompt over %d bytes", MaxPrompt)
	}
	if err := req.Budget.Check(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	err := r.checkLaunch(req.Workspace, req.Owner)
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	role := req.Role
	if role == "" {
		role = "agent"
	}
	if err := hub.ValidName("role", role); err != nil {
		return nil, err
	}
	rec := Agent{Workspace: req.Workspace, Provider: provName, Mode: mode, Role: role, Cwd: cwd, Origin: cwd,
		Command: req.Command, AutoWake: req.AutoWake == nil || *req.AutoWake, Owner: req.Owner, Budget: req.Budget.or(p.Budget)}
	if err := p.check(&rec); err != nil {
		return nil, err
	}
	id, err := r.reserveID(ctx, req.Workspace, req.Name)
	if err != nil {
		return nil, err
	}
	released := false
	release := func() {
		if !released {
			released = true
			r.mu.Lock()
			delete(r.agents, id)
			r.mu.Unlock()
		}
	}
	defer release()
	rec.ID = id
	rec.Title = strings.TrimSpace(req.Title)
	if rec.Title == "" {
		rec.Title = defaultTitle(req.Prompt, id)
	}
	if req.Worktree {
		dir, branch, wt, err := makeWorktree(ctx, r.opts.Home, cwd, id)
		if err != nil {
			return nil, err
		}
		rec.Cwd, rec.Worktree, rec.Branch = dir, wt, branch
	}
	now := time.Now().UTC()
	rec.CreatedAt, rec.UpdatedAt = now, now
	if _, err := r.hub.Join(ctx, hub.JoinRequest{Workspace: rec.Workspace, Name: id, Role: role, Module: "managed"}); err != nil {
		return nil, err
	}
	if _, err := writeMCPConfig(r.agentDir(id), &turn{Agent: rec, Exe: r.opts.Exe, Home: r.opts.Home}); err != nil {
		return nil, err
	}
	if err := r.store.PutManagedAgent(ctx, &rec); err != nil {
		return nil, err
	}
	st := &agent{rec: rec, changed: make(chan struct{}), observe: r.opts.Observer}
	r.mu.Lock()
	r.agents[id] = st
	r.mu.Unlock()
	released = true
	note := fmt.Sprintf("created: provider %s, mode %s, in %s", provName, mode, rec.Cwd)
	if !rec.Budget.IsZero() {
		note += "; budget: " + budgetLine(rec.Budget)
	}
	r.emit(st, &Event{Kind: EvNote, Text: note})
	r.log.Info("managed agent created", "agent", id, "workspace", rec.Workspace, "provider", provName)
	if strings.TrimSpace(req.Prompt) != "" {
		if _, err := r.enqueue(st, req.Prompt, "create"); err != nil {
			return nil, err
		}
	}
	return r.Get(rec.Workspace, id)
}

// reserveID picks the agent's id (name, or a fresh one) and holds it in the
// agent map until Create finishes or gives up.
func (r *Runner) reserveID(ctx context.Context, ws, name string) (string, error) {
	for range 10 {
		id := name
		if id == "" {
			id = newID()
		} else if err := hub.ValidName("agent name", id); err != nil {
			return "", err
		}
		_, err := r.hub.Agent(ctx, ws, id)
		taken := err == nil
		if err != nil && !hub.IsNotFound(err) {
			return "", err
		}
		r.mu.Lock()
		if r.agents[id] != nil {
			taken = true
		}
		if !taken {
			r.agents[id] = &agent{rec: Agent{ID: id, Workspace: ws, Exited: true}, changed: make(chan struct{})}
		}
		r.mu.Unlock()
		if !taken {
			return id, nil
		}
		if name != "" {
			return "", hub.Errorf("create_agent", hub.Conflict, "an agent named %s already exists: pick another name", name)
		}
	}
	return "", hub.Errorf("create_agent", hub.Internal, "could not pick a free agent id")
}

func newID() string {
	var b [5]byte
	rand.Read(b[:])
	return "ag-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

func defaultTitle(prompt, id string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	if line == "" {
		return id
	}
	return truncUTF8(line, 60)
}

func (r *Runner) agentDir(id string) string { return filepath.Join(r.opts.Home, "agents", id) }

// ProviderNames lists the providers, sorted.
func (r *Runner) ProviderNames() []string {
	var ns []string
	for n := range r.provs {
		ns = append(ns, n)
	}
	sortStrings(ns)
	return ns
}

// ---- lookups ----

// lookup returns the agent id of workspace ws (ws "" matches any).
func (r *Runner) lookup(op, ws, id string) (*agent, error) {
	st := r.agents[id]
	if st == nil || st.rec.CreatedAt.IsZero() || (ws != "" && st.rec.Workspace != ws) {
		where := ""
		if ws != "" {
			where = " in workspace " + ws
		}
		return nil, hub.Errorf(op, hub.NotFound, "no managed agent %q%s: list them with list_agents (manager) or `parley agent list`", id, where)
	}
	return st, nil
}

func (st *agent) status() Status {
	switch {
	case st.rec.Exited:
		return StatusExited
	case len(st.perms) > 0:
		return StatusWaitingPermission
	case st.run != nil || len(st.queue) > 0:
		return StatusRunning
	case st.rec.LastError != "":
		return StatusError
	}
	return StatusIdle
}

// notify wakes everyone waiting for a change of st, and tells the observer
// of a new status. Call with r.mu held.
func (st *agent) notify() {
	close(st.changed)
	st.changed = make(chan struct{})
	if st.observe != nil {
		if s := st.status(); s != st.observed {
			st.observed = s
			st.observe(Change{Workspace: st.rec.Workspace, Agent: st.rec.ID, Status: s})
		}
	}
}

// Get returns the agent's snapshot.
func (r *Runner) Get(ws, id string) (*Snapshot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := r.lookup("get_agent_status", ws, id)
	if err != nil {
		return nil, err
	}
	return st.snapshot(), nil
}

// Detail returns the agent with up to runs of its latest runs, newest first.
func (r *Runner) Detail(ctx context.Context, ws, id string, runs int) (*Snapshot, []*Run, error) {
	a, err := r.Get(ws, id)
	if err != nil {
		return nil, nil, err
	}
	rs, err := r.store.Runs(ctx, id, runs)
	if err != nil {
		return nil, nil, err
	}
	return a, rs, nil
}

// List returns the agents of ws (every workspace when ws is ""), oldest first.
func (r *Runner) List(ws string) []*Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Snapshot
	for _, st := range r.agents {
		if st.rec.CreatedAt.IsZero() || (ws != "" && st.rec.Workspace != ws) {
			continue
		}
		out = append(out, st.snapshot())
	}
	sortAgents(out)
	return out
}

// IsManaged reports whether name is a managed agent of ws.
func (r *Runner) IsManaged(ws, name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := r.lookup("", ws, name)
	return err == nil
}

// TakesMail reports whether the runner brings the agent its mail itself
// now: a managed agent that wakes for mail and is idle, or whose turn in
// progress takes mail (a kept session, steered). A managed agent busy with
// a turn that cannot take mail is reached through its CLI's own door (the
// daemon's doorman), like any session; an agent that is not managed, only
// through its door.
func (r *Runner) TakesMail(ws, name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := r.lookup("", ws, name)
	if err != nil || r.closed || !st.rec.AutoWake || st.rec.Exited {
		return false
	}
	return st.run == nil || st.run.steerable()
}

// snapshot copies st's state. Call with r.mu held.
func (st *agent) snapshot() *Snapshot {
	s := &Snapshot{Agent: st.rec, Status: st.status(), Queued: len(st.queue), Runs: st.nextRun}
	if st.run != nil {
		s.Current = copyRun(st.run.run)
	}
	if st.lastRun != nil {
		s.LastMessage = st.lastRun.LastMessage
	}
	for _, p := range st.perms {
		cp := *p
		s.Pending = append(s.Pending, &cp)
	}
	return s
}

func copyRun(r *Run) *Run {
	cp := *r
	return &cp
}

// ---- prompts and runs ----

// Prompt queues a prompt for the agent; it runs now when the agent is idle.
func (r *Runner) Prompt(ctx context.Context, ws, id, prompt string) (*Enqueued, error) {
	const op = "send_agent_prompt"
	if strings.TrimSpace(prompt) == "" {
		return nil, hub.Errorf(op, hub.Invalid, "prompt must not be empty")
	}
	if len(prompt) > MaxPrompt {
		return nil, hub.Errorf(op, hub.TooLarge, "prompt over %d bytes", MaxPrompt)
	}
	r.mu.Lock()
	st, err := r.lookup(op, ws, id)
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	r.resumeWake(st.rec.Workspace, st.rec.ID)
	return r.enqueue(st, prompt, "prompt")
}

func (r *Runner) enqueue(st *agent, prompt, source string) (*Enqueued, error) {
	r.mu.Lock()
	if st.rec.Exited {
		r.mu.Unlock()
		if st.rec.StopReason != "" {
			return nil, hub.Errorf("send_agent_prompt", hub.Conflict, "agent %s was stopped: %s; create a new agent", st.rec.ID, st.rec.StopReason)
		}
		return nil, hub.Errorf("send_agent_prompt", hub.Conflict, "agent %s was killed: create a new agent", st.rec.ID)
	}
	if r.closed {
		r.mu.Unlock()
		return nil, hub.Errorf("send_agent_prompt", hub.Unavailable, "the daemon is stopping")
	}
	st.nextRun++
	run := &Run{AgentID: st.rec.ID, Seq: st.nextRun, State: RunQueued, Source: source, Prompt: prompt, QueuedAt: time.Now().UTC()}
	queued := st.run != nil || len(st.queue) > 0
	st.queue = append(st.queue, run)
	st.notify()
	r.mu.Unlock()
	if err := r.saveRun(st, run); err != nil {
		r.mu.Lock()
		for i, q := range st.queue {
			if q == run {
				st.queue = append(st.queue[:i], st.queue[i+1:]...)
				break
			}
		}
		st.notify()
		r.mu.Unlock()
		return nil, err
	}
	r.dispatch(st)
	steered := queued && r.steer(st, run)
	r.mu.Lock()
	status := st.status()
	r.mu.Unlock()
	return &Enqueued{Status: status, Run: run.Seq, Queued: queued && !steered, Steered: steered}, nil
}

// dispatch starts the next queued run of st if none runs.
func (r *Runner) dispatch(st *agent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || st.run != nil || len(st.queue) == 0 || st.rec.Exited {
		return
	}
	if r.stopSpent(st) {
		return
	}
	run := st.queue[0]
	st.queue = st.queue[1:]
	run.State, run.StartedAt = RunRunning, time.Now().UTC()
	a := &active{run: run, done: make(chan struct{})}
	st.run = a
	st.rec.Turns++
	r.startClock(st, a)
	st.notify()
	r.wg.Add(1)
	go r.execute(st, a)
}

// storeWriteTimeout bounds one write of the runner's bookkeeping: a store
// that cannot take it (PostgreSQL gone) fails the write, which is logged,
// rather than hold the agent's goroutine and its locks.
const storeWriteTimeout = 10 * time.Second

// writeCtx is the context of one bookkeeping write.
func writeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), storeWriteTimeout)
}

// saveRun writes the run as it is now.
func (r *Runner) saveRun(st *agent, run *Run) error {
	st.saveMu.Lock()
	defer st.saveMu.Unlock()
	r.mu.Lock()
	cp := *run
	r.mu.Unlock()
	ctx, cancel := writeCtx()
	defer cancel()
	return r.store.PutRun(ctx, &cp)
}

// saveAgent writes the agent record as it is now.
func (r *Runner) saveAgent(st *agent) error {
	st.saveMu.Lock()
	defer st.saveMu.Unlock()
	r.mu.Lock()
	cp := st.rec
	r.mu.Unlock()
	ctx, cancel := writeCtx()
	defer cancel()
	err := r.store.PutManagedAgent(ctx, &cp)
	if err != nil {
		r.log.Error("save managed agent", "agent", cp.ID, "err", err)
	}
	return err
}

// emit appends ev to st's timeline.
func (r *Runner) emit(st *agent, ev *Event) {
	st.evMu.Lock()
	defer st.evMu.Unlock()
	ev.AgentID = st.rec.ID
	ev.Seq = st.nextEvent + 1
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	bound(ev)
	ctx, cancel := writeCtx()
	defer cancel()
	if err := r.store.AppendEvents(ctx, []*Event{ev}); err != nil {
		r.log.Error("append activity", "agent", st.rec.ID, "err", err)
		return
	}
	st.nextEvent = ev.Seq
	if st.observe != nil {
		cp := *ev
		st.observe(Change{Workspace: st.rec.Workspace, Agent: st.rec.ID, Event: &cp})
	}
}

// ---- cancel, kill, mode ----

// Cancel interrupts the agent's current run: SIGINT to its process group,
// SIGKILL after the grace period. The agent stays usable; queued prompts run
// next. It returns once the run has ended.
func (r *Runner) Cancel(ctx context.Context, ws, id string) (*Outcome, error) {
	r.mu.Lock()
	st, err := r.lookup("cancel_agent", ws, id)
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	a := st.run
	if a == nil {
		status := st.status()
		r.mu.Unlock()
		return &Outcome{Status: status, Note: "no run in progress"}, nil
	}
	if a.stop == "" {
		a.stop = "cancel"
	}
	r.mu.Unlock()
	r.denyAll(id, "the run was cancelled")
	r.stopProcess(a, r.opts.CancelGrace)
	select {
	case <-a.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r.mu.Lock()
	status := st.status()
	r.mu.Unlock()
	return &Outcome{Done: true, Status: status, Note: fmt.Sprintf("run %d cancelled", a.run.Seq)}, nil
}

// Kill ends the agent for good: its run's process group is killed, queued
// prompts are dropped, and it takes no more prompts. Its worktree stays.
func (r *Runner) Kill(ctx context.Context, ws, id string) (*Outcome, error) {
	r.mu.Lock()
	st, err := r.lookup("kill_agent", ws, id)
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	if st.rec.Exited {
		r.mu.Unlock()
		return &Outcome{Done: true, Status: StatusExited, Note: "already exited"}, nil
	}
	st.rec.Exited = true
	st.rec.UpdatedAt = time.Now().UTC()
	a := st.run
	if a != nil {
		a.stop = "kill"
	}
	dropped := st.queue
	st.queue = nil
	for _, q := range dropped {
		q.State, q.EndedAt, q.Error = RunCancelled, time.Now().UTC(), "the agent was killed"
		st.finished = max(st.finished, q.Seq)
	}
	st.notify()
	r.mu.Unlock()
	r.denyAll(id, "the agent was killed")
	if a != nil {
		r.stopProcess(a, 0)
		select {
		case <-a.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	r.closeSession(st)
	for _, q := range dropped {
		r.saveRun(st, q)
	}
	if err := r.saveAgent(st); err != nil {
		return nil, err
	}
	r.emit(st, &Event{Kind: EvNote, Text: "killed"})
	if err := r.hub.SetStatus(ctx, st.rec.Workspace, id, hub.StatusOffline); err != nil && !hub.IsNotFound(err) {
		r.log.Warn("set killed agent offline", "agent", id, "err", err)
	}
	r.log.Info("managed agent killed", "agent", id)
	return &Outcome{Done: true, Status: StatusExited}, nil
}

// SetMode changes the agent's permission mode from its next run on.
func (r *Runner) SetMode(ctx context.Context, ws, id, mode string) error {
	if err := ValidMode(mode); err != nil {
		return err
	}
	r.mu.Lock()
	st, err := r.lookup("set_agent_mode", ws, id)
	if err != nil {
		r.mu.Unlock()
		return err
	}
	st.rec.Mode = mode
	st.rec.UpdatedAt = time.Now().UTC()
	st.notify()
	r.mu.Unlock()
	if err := r.saveAgent(st); err != nil {
		return err
	}
	r.emit(st, &Event{Kind: EvNote, Text: "mode set to " + mode})
	return nil
}

// SetTitle changes the agent's title (the self profile's set_title).
func (r *Runner) SetTitle(ctx context.Context, ws, id, title string) error {
	title = strings.TrimSpace(title)
	if title == "" {
		return hub.Errorf("set_title", hub.Invalid, "title must not be empty")
	}
	if len(title) > 200 {
		return hub.Errorf("set_title", hub.Invalid, "title over 200 bytes")
	}
	r.mu.Lock()
	st, err := r.lookup("set_title", ws, id)
	if err != nil {
		r.mu.Unlock()
		return notManaged("set_title", ws, id)
	}
	st.rec.Title = title
	st.rec.UpdatedAt = time.Now().UTC()
	st.notify()
	r.mu.Unlock()
	if err := r.saveAgent(st); err != nil {
		return err
	}
	r.emit(st, &Event{Kind: EvNote, Text: "title set to " + title})
	return nil
}

func notManaged(op, ws, id string) error {
	if id == "" {
		return hub.Errorf(op, hub.Forbidden, "%s is for agents Parley launched: this session has no agent identity", op)
	}
	return hub.Errorf(op, hub.Forbidden, "%s is for agents Parley launched: %s is not one in workspace %s", op, id, ws)
}

// ---- wait ----

// Wait blocks until run of the agent ends (0: its current run, else the
// next queued one), a permission request is pending, or timeout passes.
// progress, if not nil, is called every `every` while it waits.
func (r *Runner) Wait(ctx context.Context, ws, id string, run int, timeout, every time.Duration, progress func(waited time.Duration)) (*Waited, error) {
	const op = "wait_for_agent"
	start := time.Now()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var tick <-chan time.Time
	if progress != nil && every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	r.mu.Lock()
	st, err := r.lookup(op, ws, id)
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	target := run
	switch {
	case run < 0 || run > st.nextRun:
		last := st.nextRun
		r.mu.Unlock()
		return nil, hub.Errorf(op, hub.NotFound, "agent %s has no run %d (its runs are 1 to %d)", id, run, last)
	case run > 0:
	case st.run != nil:
		target = st.run.run.Seq
	case len(st.queue) > 0:
		target = st.queue[0].Seq
	}
	timedOut := false
	for {
		if len(st.perms) > 0 || target == 0 || st.finished >= target || st.rec.Exited || timedOut {
			break
		}
		ch := st.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			timedOut = true
		case <-tick:
			progress(time.Since(start))
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-r.ctx.Done():
			return nil, hub.Errorf(op, hub.Unavailable, "the daemon is stopping")
		}
		r.mu.Lock()
	}
	out := &Waited{Status: st.status(), TimedOut: timedOut, Waited: time.Since(start)}
	if len(st.perms) > 0 {
		p := *st.perms[0]
		out.Permission = &p
	}
	var ended *Run // the run to report, when it ended
	switch {
	case st.run != nil && (st.run.run.Seq == target || st.finished < target):
		out.Run = copyRun(st.run.run)
	case st.lastRun != nil && (run == 0 || st.lastRun.Seq == target):
		ended = copyRun(st.lastRun)
	}
	for _, q := range st.queue {
		if q.Seq == target && out.Run == nil {
			out.Run = copyRun(q)
		}
	}
	next := st.nextRun
	r.mu.Unlock()
	if ended == nil && out.Run == nil && target > 0 {
		// An older run, which ended before the latest: it is in the store.
		runs, err := r.store.Runs(ctx, id, next-target+1)
		if err != nil {
			return nil, err
		}
		for _, rr := range runs {
			if rr.Seq == target {
				ended = rr
			}
		}
	}
	if ended != nil {
		out.Run, out.LastMessage = ended, ended.LastMessage
	}
	if timedOut {
		out.LastMessage = "waiting for the agent timed out; this does not mean it failed: call wait_for_agent again to keep waiting"
	}
	return out, nil
}

// ---- activity ----

// Activity returns events of the agent's timeline: limit of them from offset
// (0 is the oldest), or the latest limit when offset is negative.
func (r *Runner) Activity(ctx context.Context, ws, id string, offset, limit int) (*Page, error) {
	r.mu.Lock()
	st, err := r.lookup("get_agent_activity", ws, id)
	var status Status
	var mode string
	if err == nil {
		status, mode = st.status(), st.rec.Mode
	}
	r.mu.Unlock()
	if hub.IsNotFound(err) {
		// Another daemon on the store may run it: its timeline is shared.
		if s, _, perr := r.Peer(ctx, ws, id, 0); perr == nil {
			status, mode, err = s.Status, s.Mode, nil
		}
	}
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 50
	}
	if limit > 1000 {
		return nil, hub.Errorf("get_agent_activity", hub.Invalid, "limit over 1000")
	}
	if offset < 0 {
		_, total, err := r.store.Events(ctx, id, 0, 0)
		if err != nil {
			return nil, err
		}
		offset = max(0, total-limit)
	}
	evs, total, err := r.store.Events(ctx, id, offset, limit)
	if err != nil {
		return nil, err
	}
	return &Page{Status: status, Mode: mode, Total: total, Offset: offset, Events: evs}, nil
}

// Summary renders the page as a few readable lines.
func (p *Page) Summary() string {
	var b strings.Builder
	if len(p.Events) == 0 {
		fmt.Fprintf(&b, "No activity at offset %d (%d events in all).", p.Offset, p.Total)
		return b.String()
	}
	fmt.Fprintf(&b, "Showing events %d-%d of %d\n", p.Offset+1, p.Offset+len(p.Events), p.Total)
	for _, e := range p.Events {
		b.WriteString("\n")
		b.WriteString(e.Line())
	}
	return b.String()
}

// Line renders the event on one line.
func (e *Event) Line() string {
	clip := func(s string) string {
		s = strings.Join(strings.Fields(s), " ")
		if len(s) > 240 {
			s = truncUTF8(s, 240) + "..."
		}
		return s
	}
	head := fmt.Sprintf("#%d [run %d] ", e.Seq, e.Run)
	switch e.Kind {
	case EvText:
		return head + "assistant: " + clip(e.Text)
	case EvToolUse:
		return head + "tool call " + e.Tool + " " + clip(string(e.Data))
	case EvToolResult:
		s := head + "tool result"
		if e.IsError {
			s += " (error)"
		}
		return s + ": " + clip(e.Text)
	case EvPermission:
		return head + "permission requested for " + e.Tool + " " + clip(string(e.Data))
	}
	s := head + e.Kind
	if e.Text != "" {
		s += ": " + clip(e.Text)
	}
	return s
}
