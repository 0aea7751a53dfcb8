package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/parley-dev/parley/internal/codexrpc"
	"github.com/parley-dev/parley/internal/proc"
)

// A session is the process of a steerable agent (a provider with steer =
// true), kept across its turns: Claude Code reading stream-json prompts on
// stdin, or `codex app-server` speaking JSON-RPC. A prompt that arrives while
// a run is in progress is streamed into that run (steer) instead of waiting
// in the queue, and cancel interrupts the turn without killing the process.
//
// The agent's run in progress owns the session while its turn runs: it sends
// the prompt, waits for the turn's end, and ends the runs that the turn took
// in (its own and those steered into it).
type session struct {
	format string // KindClaude or formatAppServer
	mode   string // the agent's mode when it started: another mode needs a new process
	pid    int    // process group
	stdin  io.WriteCloser
	wmu    sync.Mutex // one line at a time on stdin
	stderr *tail

	ctx    context.Context // ends when the process is gone
	cancel context.CancelFunc
	exited chan struct{} // closed once the process is gone and its output read
	err    error         // how it ended, once exited

	// steerMu makes a steer in flight settle before a turn's end is taken,
	// so that a prompt is never both streamed into a turn and left out of
	// the runs that turn ends.
	steerMu sync.Mutex
	// ends carries each turn's end to the run waiting for it.
	ends chan turnEnd

	// Claude: the runs whose prompts were written and have not ended, in
	// order, and how many of them Claude Code took into the turn in
	// progress (it echoes each prompt as it takes it). Guarded by Runner.mu.
	written  []int
	consumed int

	// Codex: the JSON-RPC connection, the thread and the turn in progress
	// (turn is guarded by Runner.mu).
	rpc    *codexrpc.Conn
	thread string
	turn   string
}

// turnEnd is the end of one turn of a session.
type turnEnd struct {
	ps *parser
	// took is how many of the prompts written the turn took in (the run's
	// own first); -1 means all of them.
	took int
}

// sessionMarker tags a session's processes, as runMarker tags a run's: a
// session outlives the run that started it.
func sessionMarker(agent string) string { return agent + "/session" }

// startSession starts st's session process for turn t.
func (r *Runner) startSession(st *agent, p *provider, t *turn) (*session, error) {
	sp, err := p.build(t)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(sp.Argv[0], sp.Argv[1:]...)
	cmd.Dir = t.Agent.Cwd
	cmd.Env = agentEnv(t, p.Env, append(sp.Env, "PARLEY_RUN="+sessionMarker(t.Agent.ID)))
	proc.OwnGroup(cmd)
	s := &session{format: sp.Format, mode: modeOr(t.Agent.Mode), stderr: &tail{max: 8 << 10},
		exited: make(chan struct{}), ends: make(chan turnEnd, 16)}
	cmd.Stderr = s.stderr
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", sp.Argv[0], err)
	}
	s.pid = cmd.Process.Pid
	s.ctx, s.cancel = context.WithCancel(r.ctx)
	if s.format == formatAppServer {
		s.rpc = newRPCConn(s)
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.readSession(st, s, stdout)
		s.err = cmd.Wait()
		s.cancel()
		if s.rpc != nil {
			s.rpc.Fail(errors.New("the codex app-server exited"))
		}
		close(s.exited)
		r.mu.Lock()
		idle := st.sess == s && (st.run == nil || st.run.sess != s)
		if st.sess == s {
			st.sess = nil
		}
		r.mu.Unlock()
		if idle && r.ctx.Err() == nil {
			r.emit(st, &Event{Kind: EvNote, Text: "the agent's session process exited: " + exitText(s.err, s.stderr.String())})
		}
	}()
	r.log.Info("session started", "agent", t.Agent.ID, "pid", s.pid, "format", s.format)
	if s.rpc != nil {
		if err := r.openThread(st, s, t); err != nil {
			s.kill()
			<-s.exited
			return nil, err
		}
	}
	return s, nil
}

// alive reports whether the session's process still runs.
func (s *session) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// kill ends the session's process group, while it runs: once the process
// has ended, its number may lead another's group (see groupOf).
func (s *session) kill() {
	if s.alive() {
		proc.KillGroup(s.pid)
	}
}

// writeLine writes one JSON line on the session's stdin.
func (s *session) writeLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.write(b)
}

// write writes msg, one JSON object, as a line on the session's stdin.
func (s *session) write(msg []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := s.stdin.Write(append(msg, '\n')); err != nil {
		return fmt.Errorf("write to the agent's process: %w", err)
	}
	return nil
}

// claudePrompt is a prompt as Claude Code's stream-json input takes it.
func claudePrompt(text string) map[string]any {
	return map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}}
}

// send starts a turn of s with run's prompt.
func (r *Runner) send(st *agent, s *session, run *Run) error {
	if s.format == formatAppServer {
		return r.startTurn(st, s, run)
	}
	r.mu.Lock()
	s.written = append(s.written, run.Seq)
	r.mu.Unlock()
	return s.writeLine(claudePrompt(run.Prompt))
}

// streamIn streams run's prompt into the turn in progress of s.
func (r *Runner) streamIn(st *agent, s *session, run *Run) error {
	if s.format == formatAppServer {
		return r.steerTurn(s, run)
	}
	r.mu.Lock()
	s.written = append(s.written, run.Seq)
	r.mu.Unlock()
	if err := s.writeLine(claudePrompt(run.Prompt)); err != nil {
		r.mu.Lock()
		if n := len(s.written); n > 0 && s.written[n-1] == run.Seq {
			s.written = s.written[:n-1]
		}
		r.mu.Unlock()
		return err
	}
	return nil
}

// interrupt asks the session to stop its turn in progress; the turn then
// ends as usual.
func (r *Runner) interrupt(s *session) error {
	if s.format == formatAppServer {
		return r.interruptTurn(s)
	}
	return s.writeLine(map[string]any{"type": "control_request", "request_id": "parley-interrupt-" + newID(),
		"request": map[string]string{"subtype": "interrupt"}})
}

// readSession turns the session's output into timeline events and turn
// ends until the process closes it.
func (r *Runner) readSession(st *agent, s *session, stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	ps := newParser(s.format)
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			if s.rpc != nil {
				r.appServerLine(st, s, &ps, line)
			} else {
				r.claudeLine(st, s, &ps, line)
			}
		}
		if err != nil {
			return
		}
	}
}

// claudeLine handles one line of Claude Code's stream-json output.
func (r *Runner) claudeLine(st *agent, s *session, ps **parser, line []byte) {
	var head struct {
		Type    string `json:"type"`
		Message *struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	json.Unmarshal(line, &head)
	r.mu.Lock()
	seq := 0
	if len(s.written) > 0 {
		seq = s.written[0]
	}
	if head.Type == "user" && head.Message != nil && len(head.Message.Content) > 0 && head.Message.Content[0] == '"' {
		// The echo of a prompt: the turn in progress took it in.
		s.consumed = min(s.consumed+1, len(s.written))
	}
	r.mu.Unlock()
	for _, ev := range (*ps).line(line) {
		ev.Run = seq
		r.emit(st, ev)
	}
	if id := (*ps).sessionID; id != "" {
		r.noteSession(st, id)
	}
	if head.Type != "result" {
		return
	}
	r.mu.Lock()
	took := max(s.consumed, 1)
	s.written = s.written[min(took, len(s.written)):]
	s.consumed = 0
	r.mu.Unlock()
	s.ends <- turnEnd{ps: *ps, took: took}
	base := (*ps).costBase + (*ps).costUSD
	*ps = newParser(s.format)
	(*ps).costBase = base
}

// executeSession runs turn a of a steerable agent in its session, starting
// the session first when it has none (or its mode changed).
func (r *Runner) executeSession(st *agent, a *active, p *provider, t *turn) {
	run := a.run
	r.mu.Lock()
	s := st.sess
	sent := s != nil && run.sentTo == s && s.alive()
	r.mu.Unlock()
	if !sent && s != nil && (!s.alive() || s.mode != modeOr(t.Agent.Mode)) {
		// A new mode takes a new process, which resumes the conversation.
		s.kill()
		<-s.exited
		s = nil
	}
	var err error
	if s == nil {
		if t.MCPConfig, err = writeMCPConfig(r.agentDir(t.Agent.ID), t); err == nil {
			s, err = r.startSession(st, p, t)
		}
		if err != nil {
			r.finish(st, a, nil, err, "")
			return
		}
		r.mu.Lock()
		st.sess = s
		r.mu.Unlock()
	}
	// A steer waits until the run's own prompt is sent: it goes first.
	s.steerMu.Lock()
	r.mu.Lock()
	if a.stop != "" {
		r.mu.Unlock()
		s.steerMu.Unlock()
		r.finish(st, a, nil, nil, "")
		return
	}
	a.pid, run.PID, a.sess = s.pid, s.pid, s
	r.mu.Unlock()
	if !sent {
		if err := r.send(st, s, run); err != nil {
			s.steerMu.Unlock()
			r.finish(st, a, nil, err, s.stderr.String())
			return
		}
	}
	s.steerMu.Unlock()
	r.saveRun(st, run)
	r.log.Info("turn started", "agent", t.Agent.ID, "run", run.Seq, "pid", s.pid, "streamed", sent)
	// Mail that came while the session started waited for the run to take
	// steering: it goes in now.
	r.markWake(t.Agent.Workspace, t.Agent.ID)

	var end turnEnd
	var werr error
	select {
	case end = <-s.ends:
	case <-s.exited:
		// Its last turn end may have come just before it exited.
		select {
		case end = <-s.ends:
		default:
			werr = s.err
			if werr == nil {
				werr = errors.New("the agent's process exited during the run")
			}
		}
	}
	// No steer may start once the turn's end is taken.
	s.steerMu.Lock()
	r.mu.Lock()
	a.ending = true
	switch {
	case werr != nil:
		a.took = 0
	case end.took < 0:
		a.took = len(a.steered)
	default:
		a.took = min(max(end.took-1, 0), len(a.steered))
	}
	r.mu.Unlock()
	s.steerMu.Unlock()
	r.finish(st, a, end.ps, werr, s.stderr.String())
}

// steer streams run, just queued, into the run in progress of st when its
// provider keeps a session and nothing else waits before it. It reports
// whether it did; if not, the run stays queued.
func (r *Runner) steer(st *agent, run *Run) bool {
	r.mu.Lock()
	a := st.run
	if a == nil || !a.steerable() || len(st.queue) != 1 || st.queue[0] != run {
		r.mu.Unlock()
		return false
	}
	s := a.sess
	r.mu.Unlock()

	s.steerMu.Lock()
	defer s.steerMu.Unlock()
	r.mu.Lock()
	if st.run != a || !a.steerable() || len(st.queue) != 1 || st.queue[0] != run {
		r.mu.Unlock()
		return false
	}
	// Out of the queue while it is streamed in, so that no dispatch takes it.
	st.queue = st.queue[:0]
	r.mu.Unlock()
	err := r.streamIn(st, s, run)
	r.mu.Lock()
	if err != nil {
		st.queue = append([]*Run{run}, st.queue...)
		r.mu.Unlock()
		r.log.Warn("steer: stream the prompt in", "agent", st.rec.ID, "run", run.Seq, "err", err)
		r.dispatch(st)
		return false
	}
	run.State, run.StartedAt, run.PID, run.sentTo = RunRunning, time.Now().UTC(), s.pid, s
	a.steered = append(a.steered, run)
	st.notify()
	r.mu.Unlock()
	r.saveRun(st, run)
	r.emit(st, &Event{Run: a.run.Seq, Kind: EvSteered, Text: run.Prompt,
		Data: mustJSON(map[string]any{"run": run.Seq, "into": a.run.Seq, "source": run.Source})})
	return true
}

// closeSession ends st's session process, if it has one, and waits for it.
func (r *Runner) closeSession(st *agent) {
	r.mu.Lock()
	s := st.sess
	r.mu.Unlock()
	if s != nil {
		s.kill()
		<-s.exited
	}
}

// exitText says how a process ended, with the end of its stderr.
func exitText(err error, stderr string) string {
	msg := "exit status 0"
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		msg = "exit status " + fmt.Sprint(ee.ExitCode())
		if sig, ok := proc.ExitSignal(ee); ok {
			msg = "killed by signal " + sig
		}
	} else if err != nil {
		msg = err.Error()
	}
	if s := strings.TrimSpace(stderr); s != "" {
		msg += ": " + lastLines(s, 5)
	}
	return msg
}
