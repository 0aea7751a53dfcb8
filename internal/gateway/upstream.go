package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/config"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/proc"
)

// upstream is one enabled upstream server and its run loop.
type upstream struct {
	m       *Manager
	name    string
	log     *slog.Logger
	ctx     context.Context // cancelled by stop
	cancel  context.CancelFunc
	done    chan struct{} // closed when run returns
	refresh chan struct{} // asks run to list tools again
	stderr  *tailBuffer

	mu       sync.Mutex
	cfg      config.Upstream
	state    string
	lastErr  string
	since    time.Time
	next     time.Time // next attempt, when failed
	restarts int
	wasReady bool // a session came up once: a failure now is worth waiting out
	sess     *mcp.ClientSession
	sessDone chan struct{} // closed when sess ends
	changed  chan struct{} // closed and replaced on every state change
	info     *mcp.InitializeResult
	tools    int
	inflight map[*inflight]struct{} // calls in progress, for log forwarding
}

type inflight struct {
	ctx context.Context
	ss  *mcp.ServerSession
}

// errTimedOut is the cause of a call's context when the upstream's timeout
// ends it, as opposed to the caller going away.
var errTimedOut = errors.New("upstream timeout")

func newUpstream(m *Manager, c config.Upstream) *upstream {
	ctx, cancel := context.WithCancel(context.Background())
	return &upstream{
		m: m, name: c.Name, cfg: c, log: m.log.With("upstream", c.Name),
		ctx: ctx, cancel: cancel,
		done: make(chan struct{}), refresh: make(chan struct{}, 1),
		stderr: &tailBuffer{max: 4096},
		state:  StateConnecting, since: time.Now(),
		changed: make(chan struct{}), inflight: map[*inflight]struct{}{},
	}
}

func (u *upstream) config() config.Upstream {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.cfg
}

func (u *upstream) setConfig(c config.Upstream) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.cfg = c
}

// setState records a state change and wakes whoever waits on one. Call with
// u.mu held.
func (u *upstream) setStateLocked(state, errText string) {
	if state != u.state {
		u.since = time.Now()
	}
	u.state, u.lastErr = state, errText
	close(u.changed)
	u.changed = make(chan struct{})
}

func (u *upstream) setState(state, errText string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.setStateLocked(state, errText)
}

func (u *upstream) status() Status {
	u.mu.Lock()
	defer u.mu.Unlock()
	st := baseStatus(u.cfg)
	st.State, st.Error, st.Restarts, st.Tools, st.Since = u.state, u.lastErr, u.restarts, u.tools, u.since.UTC()
	if u.state == StateFailed && !u.next.IsZero() {
		n := u.next.UTC()
		st.NextRetry = &n
	}
	if u.info != nil {
		if si := u.info.ServerInfo; si != nil {
			st.Server = strings.TrimSpace(si.Name + " " + si.Version)
		}
		st.Protocol = u.info.ProtocolVersion
	}
	return st
}

func (u *upstream) requestRefresh() {
	select {
	case u.refresh <- struct{}{}:
	default:
	}
}

// stop ends the run loop and the session (and so a stdio server's process).
func (u *upstream) stop() {
	u.cancel()
	<-u.done
}

// run keeps a session with the upstream until stop: connect, list tools,
// serve until the session ends, then retry after a backoff that doubles with
// each failure in a row.
func (u *upstream) run() {
	defer close(u.done)
	defer u.setState(StateStopped, "")
	failures := 0
	for {
		u.setState(StateConnecting, "")
		start := time.Now()
		err := u.session()
		if u.ctx.Err() != nil {
			return
		}
		// A session that lasted resets the backoff: this is a new failure,
		// not one more of a series.
		if time.Since(start) > u.m.opts.MaxBackoff {
			failures = 0
		}
		failures++
		delay := u.m.opts.MinBackoff << min(failures-1, 16)
		delay = min(delay, u.m.opts.MaxBackoff)
		u.log.Warn("upstream failed", "err", err, "retry_in", delay)
		u.mu.Lock()
		u.next = time.Now().Add(delay)
		u.setStateLocked(StateFailed, err.Error())
		u.mu.Unlock()
		t := time.NewTimer(delay)
		select {
		case <-u.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		u.mu.Lock()
		u.restarts++
		u.mu.Unlock()
	}
}

// session runs one session from connect to its end and returns why it ended.
func (u *upstream) session() error {
	cfg := u.config()
	client := mcp.NewClient(&mcp.Implementation{Name: "parley-gateway", Title: "Parley gateway", Version: u.m.opts.Version}, &mcp.ClientOptions{
		Logger:                      u.log,
		Capabilities:                &mcp.ClientCapabilities{}, // no roots, sampling or elicitation to offer
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { u.requestRefresh() },
		ProgressNotificationHandler: u.m.onProgress,
		LoggingMessageHandler:       u.onLog,
		KeepAlive:                   keepAlive(cfg),
	})
	var cmd *exec.Cmd
	var tr mcp.Transport
	if cfg.URL != "" {
		tr = &mcp.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: httpClient(cfg.Headers), MaxRetries: 2}
	} else {
		cmd = exec.Command(cfg.Command, cfg.Args...)
		cmd.Env = os.Environ()
		for k, v := range cfg.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Dir = cfg.Cwd
		u.stderr.Reset()
		cmd.Stderr = u.stderr
		// Its own process group: a Ctrl-C meant for a foreground daemon
		// must not reach the servers before the daemon closes them.
		proc.OwnGroup(cmd)
		tr = &mcp.CommandTransport{Command: cmd, TerminateDuration: u.m.opts.StopTimeout}
	}
	cctx, cancel := context.WithTimeout(u.ctx, u.m.opts.ConnectTimeout)
	defer cancel()
	cs, err := client.Connect(cctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		return u.explain("connect", err, cmd)
	}
	sessDone := make(chan struct{})
	go func() {
		cs.Wait()
		close(sessDone)
	}()
	defer func() {
		cs.Close()
		<-sessDone
	}()
	if caps := cs.InitializeResult().Capabilities; caps != nil && caps.Logging != nil {
		// Ask for everything: each caller's own level filters what it gets.
		if err := cs.SetLoggingLevel(cctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			u.log.Debug("set upstream logging level", "err", err)
		}
	}
	if err := u.listTools(cctx, cs); err != nil {
		return u.explain("list tools", err, cmd)
	}
	cancel()
	u.mu.Lock()
	u.sess, u.sessDone, u.info, u.wasReady = cs, sessDone, cs.InitializeResult(), true
	u.next = time.Time{}
	u.setStateLocked(StateReady, "")
	u.mu.Unlock()
	u.log.Info("upstream ready", "tools", u.status().Tools)
	defer func() {
		u.mu.Lock()
		u.sess, u.sessDone = nil, nil
		u.mu.Unlock()
	}()
	for {
		select {
		case <-u.ctx.Done():
			return u.ctx.Err()
		case <-sessDone:
			cs.Close()
			return u.explain("session", errors.New("the session ended"), cmd)
		case <-u.refresh:
			lctx, lcancel := context.WithTimeout(u.ctx, u.m.opts.ConnectTimeout)
			if err := u.listTools(lctx, cs); err != nil && u.ctx.Err() == nil {
				u.log.Warn("refresh upstream tools", "err", err)
			}
			lcancel()
		}
	}
}

// explain makes a failure readable: for a stdio server, how it exited and the
// end of what it wrote to stderr.
func (u *upstream) explain(op string, err error, cmd *exec.Cmd) error {
	if cmd == nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	msg := fmt.Sprintf("%s: %v", op, err)
	if cmd.ProcessState != nil {
		msg += fmt.Sprintf("; the server exited (%s)", cmd.ProcessState)
	}
	if tail := u.stderr.Tail(); tail != "" {
		msg += "; stderr: " + tail
	}
	return errors.New(msg)
}

// listTools reads all the upstream's tools, filters them and publishes them.
func (u *upstream) listTools(ctx context.Context, cs *mcp.ClientSession) error {
	cfg := u.config()
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return err
		}
		if !cfg.Allows(t.Name) {
			continue
		}
		if !objectSchema(t.InputSchema) {
			u.log.Warn("upstream tool skipped: its input schema is not an object schema", "tool", t.Name)
			continue
		}
		tools = append(tools, t)
	}
	u.mu.Lock()
	u.tools = len(tools)
	u.mu.Unlock()
	u.m.publish(u, tools)
	return nil
}

func objectSchema(s any) bool {
	m, ok := s.(map[string]any)
	return ok && m["type"] == "object"
}

// keepAlive pings HTTP upstreams, whose death nothing else reveals between
// calls; a stdio server's death closes its pipe.
func keepAlive(c config.Upstream) time.Duration {
	if c.URL != "" {
		return 30 * time.Second
	}
	return 0
}

// ready waits for a ready session other than avoid (one that just failed).
// It gives up at once when the upstream never came up, or when its next
// attempt is further away than the call can wait.
func (u *upstream) ready(ctx context.Context, avoid *mcp.ClientSession) (*mcp.ClientSession, error) {
	for {
		u.mu.Lock()
		cs, done, state, next, lastErr, changed, wasReady := u.sess, u.sessDone, u.state, u.next, u.lastErr, u.changed, u.wasReady
		u.mu.Unlock()
		switch state {
		case StateReady:
			if cs != nil && cs != avoid && !isClosed(done) {
				return cs, nil
			}
		case StateStopped:
			return nil, hub.Errorf("", hub.Unavailable, "upstream %q was stopped (removed, disabled or the daemon is shutting down)", u.name)
		case StateFailed:
			wait := time.Until(next)
			if dl, ok := ctx.Deadline(); !wasReady || (ok && next.After(dl)) || wait > 2*time.Second {
				return nil, hub.Errorf("", hub.Unavailable, "upstream %q is unavailable (next attempt in %s): %s", u.name, wait.Round(time.Millisecond), lastErr)
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func isClosed(c chan struct{}) bool {
	if c == nil {
		return true
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// call forwards one tools/call. It retries only when the request cannot have
// reached the upstream: no ready session, or a connection that was already
// closed when the call was written. A call that may have run is never retried.
func (u *upstream) call(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	cfg := u.config()
	timeout := cfg.CallTimeout()
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimedOut)
	defer cancel()
	timedOut := func(err error) error {
		if context.Cause(ctx) == errTimedOut {
			return hub.Errorf("", hub.Timeout, "upstream %s timed out after %s", u.name, timeout)
		}
		return err
	}
	var failed *mcp.ClientSession
	var lastErr error
	for attempt := 0; attempt <= cfg.RetryCount(); attempt++ {
		cs, err := u.ready(ctx, failed)
		if err != nil {
			if lastErr != nil && ctx.Err() == nil {
				err = fmt.Errorf("%w (after: %v)", err, lastErr)
			}
			return nil, timedOut(err)
		}
		res, err := cs.CallTool(ctx, params)
		switch {
		case err == nil:
			return res, nil
		case ctx.Err() != nil:
			return nil, timedOut(ctx.Err())
		}
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			return nil, je // the upstream's own answer, unchanged
		}
		if !errors.Is(err, mcp.ErrConnectionClosed) {
			return nil, hub.Errorf("", hub.Unavailable, "upstream %s: %v (not retried: the call may have run)", u.name, err)
		}
		u.log.Debug("call not sent: connection closed; retrying", "attempt", attempt+1)
		failed, lastErr = cs, err
	}
	return nil, hub.Errorf("", hub.Unavailable, "upstream %s: not reachable after %d attempts: %v", u.name, cfg.RetryCount()+1, lastErr)
}

// track registers a call in progress so that the upstream's log messages
// reach its caller; the returned function ends it.
func (u *upstream) track(ctx context.Context, ss *mcp.ServerSession) func() {
	f := &inflight{ctx: ctx, ss: ss}
	u.mu.Lock()
	u.inflight[f] = struct{}{}
	u.mu.Unlock()
	return func() {
		u.mu.Lock()
		delete(u.inflight, f)
		u.mu.Unlock()
	}
}

// onLog forwards an upstream's log message to the sessions with a call in
// progress on it (a log message names no request), each filtered by that
// session's own level. Messages are not written to the daemon's log: they
// may hold content.
func (u *upstream) onLog(_ context.Context, req *mcp.LoggingMessageRequest) {
	u.mu.Lock()
	targets := make([]*inflight, 0, len(u.inflight))
	for f := range u.inflight {
		targets = append(targets, f)
	}
	u.mu.Unlock()
	if len(targets) == 0 {
		return
	}
	p := *req.Params
	p.Logger = u.name
	if req.Params.Logger != "" {
		p.Logger += "/" + req.Params.Logger
	}
	for _, f := range targets {
		if err := f.ss.Log(f.ctx, &p); err != nil {
			u.log.Debug("forward log message", "err", err)
		}
	}
}

// httpClient adds the configured headers to every request.
func httpClient(headers map[string]string) *http.Client {
	if len(headers) == 0 {
		return nil
	}
	return &http.Client{Transport: &headerTransport{base: http.DefaultTransport, headers: headers}}
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

// tailBuffer keeps the last max bytes written to it: a server's stderr.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = t.b[:0]
}

// Tail returns the last lines written, at most 500 bytes, on one line.
func (t *tailBuffer) Tail() string {
	t.mu.Lock()
	s := strings.TrimSpace(string(t.b))
	t.mu.Unlock()
	if len(s) > 500 {
		s = "..." + s[len(s)-500:]
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " | ")), " ")
}
