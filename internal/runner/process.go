package runner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parley-dev/parley/internal/proc"
)

// maxLine bounds one line of provider output; longer lines are cut.
const maxLine = 8 << 20

// execute runs one turn of st: the provider's process, its output parsed into
// the timeline, and the run's outcome. It owns a until it ends.
func (r *Runner) execute(st *agent, a *active) {
	defer r.wg.Done()
	defer close(a.done)
	run := a.run

	r.mu.Lock()
	rec := st.rec
	r.mu.Unlock()
	// While the run lives, so does the agent: its claims are renewed.
	defer r.hub.KeepClaims(rec.Workspace, rec.ID)()
	p := r.provs[rec.Provider]
	t := &turn{Agent: rec, Prompt: run.Prompt, Exe: r.opts.Exe, Home: r.opts.Home, Run: run.Seq}
	r.emit(st, &Event{Run: run.Seq, Kind: EvRunStarted, Text: run.Prompt, Data: mustJSON(map[string]string{"source": run.Source, "mode": modeOr(rec.Mode)})})

	if p != nil && p.steer {
		r.executeSession(st, a, p, t)
		return
	}
	var sp *spec
	var err error
	if p == nil {
		err = fmt.Errorf("provider %q is no longer configured", rec.Provider)
	} else if t.MCPConfig, err = writeMCPConfig(r.agentDir(rec.ID), t); err == nil {
		sp, err = p.build(t)
	}
	if err != nil {
		r.finish(st, a, nil, err, "")
		return
	}
	cmd := exec.Command(sp.Argv[0], sp.Argv[1:]...)
	cmd.Dir = rec.Cwd
	var extra map[string]string
	if p != nil {
		extra = p.Env
	}
	cmd.Env = agentEnv(t, extra, sp.Env)
	proc.OwnGroup(cmd)
	if sp.Stdin != "" {
		cmd.Stdin = strings.NewReader(sp.Stdin)
	}
	stderr := &tail{max: 8 << 10}
	cmd.Stderr = stderr
	if sp.Format == KindCodex {
		// codex exec refuses what would need an approval (approvals are
		// off) and says so only in its log: the timeline must show it.
		cmd.Stderr = &lineWriter{w: stderr, line: func(l string) {
			if ev := codexRefusal(l); ev != nil {
				ev.Run = run.Seq
				r.emit(st, ev)
			}
		}}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		r.finish(st, a, nil, err, "")
		return
	}

	r.mu.Lock()
	if a.stop != "" {
		r.mu.Unlock()
		r.finish(st, a, nil, nil, "")
		return
	}
	err = cmd.Start()
	if err == nil {
		a.pid = cmd.Process.Pid
		run.PID = a.pid
	}
	r.mu.Unlock()
	if err != nil {
		r.finish(st, a, nil, fmt.Errorf("start %s: %w", sp.Argv[0], err), "")
		return
	}
	r.saveRun(st, run)
	r.log.Info("run started", "agent", rec.ID, "run", run.Seq, "pid", a.pid)

	ps := newParser(sp.Format)
	ps.echoes(t.Prompt)
	br := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, rerr := readLine(br)
		if len(line) > 0 {
			for _, ev := range ps.line(line) {
				ev.Run = run.Seq
				r.emit(st, ev)
			}
			if ps.sessionID != "" {
				r.noteSession(st, ps.sessionID)
			}
		}
		if rerr != nil {
			break
		}
	}
	werr := cmd.Wait()
	r.mu.Lock()
	a.pid = 0 // ended: its number may be another process's soon (see groupOf)
	r.mu.Unlock()
	r.finish(st, a, ps, werr, stderr.String())
}

// readLine reads one line, cutting it at maxLine.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(buf)+len(chunk) <= maxLine {
			buf = append(buf, chunk...)
		}
		if err != nil {
			return buf, err
		}
		if !isPrefix {
			return buf, nil
		}
	}
}

// noteSession records the provider's session id so later turns resume it.
func (r *Runner) noteSession(st *agent, id string) {
	r.mu.Lock()
	if st.rec.SessionID == id {
		r.mu.Unlock()
		return
	}
	st.rec.SessionID = id
	st.rec.UpdatedAt = time.Now().UTC()
	r.mu.Unlock()
	r.saveAgent(st)
}

// finish records how run a ended: werr is the process's (or the setup's)
// error, ps what its output said.
func (r *Runner) finish(st *agent, a *active, ps *parser, werr error, stderr string) {
	run := a.run
	// A request still pending belongs to a process that is gone.
	r.denyAll(st.rec.ID, "the run ended")
	r.mu.Lock()
	stop := a.stop
	if a.clock != nil {
		a.clock.Stop()
	}
	r.mu.Unlock()

	state := RunCompleted
	var msg string
	var code *int
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		c := ee.ExitCode()
		code = &c
	} else if werr == nil && ps != nil {
		c := 0
		code = &c
	}
	switch {
	case stop == "cancel":
		state, msg = RunCancelled, "cancelled"
	case stop == "kill":
		state, msg = RunKilled, "the agent was killed"
	case stop == "shutdown":
		state, msg = RunInterrupted, "the daemon stopped during this run"
	case stop == stopBudget:
		state, msg = RunCancelled, "stopped: the agent's time budget ran out"
	case werr != nil:
		state = RunFailed
		msg = werr.Error()
		if ee != nil {
			msg = "exit status " + strconv.Itoa(ee.ExitCode())
			if sig, ok := proc.ExitSignal(ee); ok {
				msg = "killed by signal " + sig
			}
		}
		if s := strings.TrimSpace(stderr); s != "" {
			msg += ": " + lastLines(s, 5)
		}
	case ps != nil && ps.resultError != "":
		state, msg = RunFailed, ps.resultError
	}
	if state == RunFailed {
		r.emit(st, &Event{Run: run.Seq, Kind: EvError, Text: msg, IsError: true})
	}
	var cost float64
	var usage []byte
	var last string
	if ps != nil {
		cost, usage, last = ps.costUSD, ps.usage, ps.lastText
	}
	now := time.Now().UTC()
	kind := EvRunFinished
	if state == RunInterrupted {
		kind = EvInterrupted
	}
	r.emit(st, &Event{Run: run.Seq, Kind: kind, Text: string(state) + ifSet(": ", msg, ""), IsError: state == RunFailed,
		Data: mustJSON(map[string]any{"state": state, "exit_code": code, "cost_usd": cost, "duration_ms": now.Sub(run.StartedAt).Milliseconds()})})

	r.mu.Lock()
	run.State, run.EndedAt, run.ExitCode, run.Error = state, now, code, msg
	run.CostUSD, run.Usage, run.LastMessage = cost, usage, last
	// The runs streamed into this one's turn end with it, as far as the turn
	// took them in; the rest run next, first in the queue.
	took, rest := a.steered[:a.took], a.steered[a.took:]
	for _, sr := range took {
		sr.State, sr.EndedAt, sr.ExitCode, sr.Error, sr.LastMessage = state, now, code, msg, last
		sr.sentTo = nil
	}
	for _, sr := range rest {
		sr.State, sr.StartedAt, sr.PID = RunQueued, time.Time{}, 0
		if werr != nil || (stop != "" && stop != "cancel") {
			sr.sentTo = nil // its session is gone or going: send it again
		}
	}
	if len(rest) > 0 {
		st.queue = append(append([]*Run(nil), rest...), st.queue...)
	}
	r.mu.Unlock()
	// Saved before anyone waiting hears that they ended: a wait for one of
	// them that is not the latest finds it in the store.
	r.saveRun(st, run)
	for _, sr := range took {
		r.saveRun(st, sr)
	}
	r.mu.Lock()
	st.run = nil
	st.lastRun = run
	if n := len(took); n > 0 {
		st.lastRun = took[n-1]
	}
	st.finished = max(st.finished, st.lastRun.Seq)
	st.rec.CostUSD += cost
	if !run.StartedAt.IsZero() {
		st.rec.Busy += now.Sub(run.StartedAt)
	}
	switch state {
	case RunFailed:
		st.rec.LastError = fmt.Sprintf("run %d failed: %s", run.Seq, msg)
	case RunCompleted, RunCancelled:
		st.rec.LastError = ""
	}
	st.rec.UpdatedAt = now
	st.notify()
	r.mu.Unlock()

	r.saveAgent(st)
	r.log.Info("run ended", "agent", st.rec.ID, "run", run.Seq, "state", state)
	if stop != "shutdown" {
		// A bound this turn reached stops the agent now, idle or not.
		r.mu.Lock()
		stopped := r.stopSpent(st)
		r.mu.Unlock()
		if stopped {
			return
		}
		r.dispatch(st)
		r.markWake(st.rec.Workspace, st.rec.ID)
	}
}

// stopProcess ends a's process group: SIGINT, then SIGKILL once grace has
// passed (at once when grace is 0). A run in a session is interrupted
// instead, and its process lives on, unless it ignores that for grace. It
// returns without waiting.
func (r *Runner) stopProcess(a *active, grace time.Duration) {
	r.mu.Lock()
	s, stop := a.sess, a.stop
	r.mu.Unlock()
	pid := r.groupOf(a)
	if pid == 0 {
		return // not started (execute sees a.stop and does not start it), or ended
	}
	if grace <= 0 {
		proc.KillGroup(pid)
		return
	}
	if s == nil || stop != "cancel" || r.interrupt(s) != nil {
		if pid := r.groupOf(a); pid != 0 {
			proc.InterruptGroup(pid)
		}
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-a.done:
		case <-t.C:
			if pid := r.groupOf(a); pid != 0 {
				r.log.Info("run ignored SIGINT: killing its process group", "pid", pid)
				proc.KillGroup(pid)
			}
		}
	}()
}

// groupOf is the process group of a's process while that runs, else 0.
// Once it has ended (and been reaped), its number is free: the system gives
// it to the next process, which may lead a group of its own (another
// agent's, a daemon), and a signal to the old group would reach that one.
func (r *Runner) groupOf(a *active) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a.sess != nil && !a.sess.alive() {
		return 0
	}
	return a.pid
}

// killOrphans kills the process group a dead daemon's run left behind, if
// its leader still runs and carries the run's marker and this installation's
// PARLEY_HOME (so a recycled pid, or an agent of the same name of another
// installation, is left alone).
func killOrphans(pid int, home string, markers ...string) {
	if pid <= 0 {
		return
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil || !bytes.Contains(append([]byte{0}, env...), []byte("\x00PARLEY_HOME="+home+"\x00")) {
		return
	}
	for _, m := range markers {
		if bytes.Contains(env, []byte("\x00PARLEY_RUN="+m+"\x00")) || bytes.HasPrefix(env, []byte("PARLEY_RUN="+m+"\x00")) {
			proc.KillGroup(pid)
			return
		}
	}
}

// lineWriter passes what is written on to w, and each whole line to line.
type lineWriter struct {
	w    io.Writer
	line func(string)
	buf  []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.w.Write(p)
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.line(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > maxLine {
		l.buf = l.buf[:0]
	}
	return len(p), nil
}

// codexRefusal is the timeline event of a line of codex exec's log that
// says it refused a tool call (an escalation, or a call that needs an
// approval while approvals are off), or nil.
func codexRefusal(line string) *Event {
	_, msg, ok := strings.Cut(line, "codex_core::tools::router: error=")
	if !ok || !strings.Contains(line, "ERROR") {
		return nil
	}
	return &Event{Kind: EvRefused, IsError: true,
		Text: "codex refused a tool call without asking anyone: " + strings.TrimSpace(msg) + " (a codex provider with steer = true runs codex app-server, whose approvals go to Parley's permission inbox)"}
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

var _ io.Writer = (*tail)(nil)

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func sortStrings(s []string) { sort.Strings(s) }

func sortAgents(as []*Snapshot) {
	sort.Slice(as, func(i, j int) bool {
		if !as[i].CreatedAt.Equal(as[j].CreatedAt) {
			return as[i].CreatedAt.Before(as[j].CreatedAt)
		}
		return as[i].ID < as[j].ID
	})
}
