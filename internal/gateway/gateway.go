// Package gateway makes the daemon an MCP client of other MCP servers (the
// upstreams of config.toml) and re-exposes their tools, as {server}__{tool}, in
// the gateway profile. It keeps one live session per enabled upstream (not a
// process per call), restarts crashed servers with backoff, and forwards calls
// with their progress, logs, cancellation and a per-upstream timeout. The
// daemon imports it; it imports config, api and hub.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/config"
	"github.com/parley-dev/parley/internal/hub"
)

// Sep separates the upstream's name from its tool's name.
const Sep = "__"

// ProtocolVersion is what the gateway asks upstreams for: go-sdk v1.8.0
// defaults to a draft version that changes result shapes.
const ProtocolVersion = "2025-11-25"

// Options configure a Manager; zero values mean defaults.
type Options struct {
	Logger  *slog.Logger
	Version string // the client version the gateway announces
	// MinBackoff is the delay before the first restart (default 250ms); it
	// doubles after each failure in a row, up to MaxBackoff (default 30s).
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// ConnectTimeout bounds starting a server, initialize and the tool list
	// (default 30s).
	ConnectTimeout time.Duration
	// StopTimeout is how long a stdio server has to exit after its stdin is
	// closed before it gets SIGTERM (default 2s).
	StopTimeout time.Duration
}

// Manager keeps the upstream sessions and publishes their tools to every MCP
// server that took the gateway profile.
type Manager struct {
	log  *slog.Logger
	opts Options

	mu      sync.Mutex
	closed  bool
	conf    []config.Upstream              // as last applied, in config order
	ups     map[string]*upstream           // running upstreams, by name
	servers map[*mcp.Server]bool           // servers that took the profile
	exposed map[string]map[string]*exposed // by upstream, by prefixed tool name
	calls   map[string]*caller             // in-flight calls by upstream progress token
	seq     atomic.Int64
}

// exposed is a tool as the gateway shows it.
type exposed struct {
	tool     *mcp.Tool // with the prefixed name
	upstream string
	name     string // the upstream's own name for it
}

// caller is a forwarded call that asked for progress.
type caller struct {
	ctx   context.Context // the caller's request: notifications go on its stream
	ss    *mcp.ServerSession
	token any // the caller's progress token
}

// New returns a Manager with no upstreams; Apply starts them.
func New(opts *Options) *Manager {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 250 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 30 * time.Second
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = 2 * time.Second
	}
	return &Manager{
		log: o.Logger, opts: o,
		ups:     map[string]*upstream{},
		servers: map[*mcp.Server]bool{},
		exposed: map[string]map[string]*exposed{},
		calls:   map[string]*caller{},
	}
}

// Apply makes the running upstreams match cfgs: it starts new and re-enabled
// ones, stops removed and disabled ones, restarts those whose command or URL
// changed, and re-filters in place those whose filter, timeout or retries
// changed. Sessions of the gateway profile stay open throughout.
func (m *Manager) Apply(cfgs []config.Upstream) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.conf = slices.Clone(cfgs)
	want := map[string]config.Upstream{}
	for _, c := range cfgs {
		if c.IsEnabled() {
			want[c.Name] = c
		}
	}
	var stop, start, refilter []*upstream
	for name, u := range m.ups {
		c, ok := want[name]
		if !ok || !sameServer(c, u.config()) {
			stop = append(stop, u)
			delete(m.ups, name)
			m.unpublishLocked(name)
			continue
		}
		if !reflect.DeepEqual(c, u.config()) {
			u.setConfig(c)
			refilter = append(refilter, u)
		}
	}
	for _, c := range cfgs {
		if _, ok := want[c.Name]; ok && m.ups[c.Name] == nil {
			u := newUpstream(m, c)
			m.ups[c.Name] = u
			start = append(start, u)
		}
	}
	m.mu.Unlock()

	var wg sync.WaitGroup
	for _, u := range stop {
		wg.Go(u.stop)
	}
	wg.Wait()
	for _, u := range start {
		go u.run()
	}
	for _, u := range refilter {
		u.requestRefresh()
	}
}

// sameServer reports whether a and b run the same server the same way, so
// that a change between them needs no restart.
func sameServer(a, b config.Upstream) bool {
	strip := func(u config.Upstream) config.Upstream {
		u.Enabled, u.Timeout, u.Retries, u.Tools = nil, 0, nil, nil
		return u
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

// Close stops every upstream. The Manager cannot be used after.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	ups := slices.Collect(maps.Values(m.ups))
	m.ups = map[string]*upstream{}
	for name := range m.exposed {
		m.unpublishLocked(name)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, u := range ups {
		wg.Go(u.stop)
	}
	wg.Wait()
}

// Status reports every configured upstream, in config order.
func (m *Manager) Status() []Status {
	m.mu.Lock()
	conf := slices.Clone(m.conf)
	ups := maps.Clone(m.ups)
	m.mu.Unlock()
	out := make([]Status, 0, len(conf))
	for _, c := range conf {
		if u := ups[c.Name]; u != nil {
			out = append(out, u.status())
			continue
		}
		st := baseStatus(c)
		st.State = StateDisabled
		if c.IsEnabled() { // closed, or being applied
			st.State = StateStopped
		}
		out = append(out, st)
	}
	return out
}

func baseStatus(c config.Upstream) Status {
	target := c.URL
	if target == "" {
		target = strings.Join(append([]string{c.Command}, c.Args...), " ")
	}
	return Status{
		Name: c.Name, Transport: c.Transport(), Target: target, Enabled: c.IsEnabled(),
		Timeout: c.CallTimeout().String(), Retries: c.RetryCount(),
	}
}

// ---- the gateway profile ----

// Profile is the gateway profile (the Attach of a profile.Profile): it adds the upstreams'
// tools to srv now and keeps srv's tools in step with them from then on.
func (m *Manager) Profile(srv *mcp.Server) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.servers[srv] = true
	for _, tools := range m.exposed {
		for _, e := range tools {
			m.addTool(srv, e)
		}
	}
}

// Tools lists the exposed tools, sorted by name; server, if not empty,
// keeps only that upstream's.
func (m *Manager) Tools(server string) []*mcp.Tool {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*mcp.Tool
	for up, tools := range m.exposed {
		if server != "" && up != server {
			continue
		}
		for _, e := range tools {
			out = append(out, e.tool)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// publish replaces u's exposed tools with tools (the upstream's, filtered),
// adding and removing them on every attached server. The SDK sends
// notifications/tools/list_changed to those servers' sessions by itself.
func (m *Manager) publish(u *upstream, tools []*mcp.Tool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name := u.name
	if m.ups[name] != u {
		return // replaced or stopped meanwhile
	}
	next := make(map[string]*exposed, len(tools))
	for _, t := range tools {
		pt := *t
		pt.Name = name + Sep + t.Name
		next[pt.Name] = &exposed{tool: &pt, upstream: name, name: t.Name}
	}
	prev := m.exposed[name]
	var removed []string
	for n := range prev {
		if next[n] == nil {
			removed = append(removed, n)
		}
	}
	var added []*exposed
	for n, e := range next {
		if p := prev[n]; p == nil || !sameTool(p.tool, e.tool) {
			added = append(added, e)
		} else {
			next[n] = p
		}
	}
	m.exposed[name] = next
	for srv := range m.servers {
		if len(removed) > 0 {
			srv.RemoveTools(removed...)
		}
		for _, e := range added {
			m.addTool(srv, e)
		}
	}
	if len(removed)+len(added) > 0 {
		m.log.Info("upstream tools changed", "upstream", name, "tools", len(next), "added", len(added), "removed", len(removed))
	}
}

// unpublishLocked removes an upstream's tools from every attached server.
func (m *Manager) unpublishLocked(name string) {
	prev := m.exposed[name]
	delete(m.exposed, name)
	if len(prev) == 0 {
		return
	}
	names := slices.Collect(maps.Keys(prev))
	for srv := range m.servers {
		srv.RemoveTools(names...)
	}
}

func sameTool(a, b *mcp.Tool) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// addTool adds a forwarding tool to srv. Each server gets its own copy of the
// definition; a definition the SDK refuses is logged and skipped.
func (m *Manager) addTool(srv *mcp.Server, e *exposed) {
	defer func() {
		if r := recover(); r != nil {
			m.log.Warn("upstream tool skipped", "upstream", e.upstream, "tool", e.name, "err", r)
		}
	}()
	t := *e.tool
	upName, tool := e.upstream, e.name
	srv.AddTool(&t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var c *caller
		if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
			c = &caller{ctx: ctx, ss: req.Session, token: tok}
		}
		res, err := m.call(ctx, upName, tool, req.Params.Arguments, req.Params.Meta, c, req.Session)
		if err == nil {
			return res, nil
		}
		var je *jsonrpc.Error
		if errors.As(err, &je) || ctx.Err() != nil {
			return nil, err
		}
		// The model should read these: a tool result, not a protocol error.
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
	})
}

// ---- calls ----

// Call forwards a call of the exposed tool name ({server}__{tool}) with its
// JSON arguments, for callers outside MCP (the JSON API). Its errors carry
// hub kinds: NotFound, Unavailable, Timeout; an upstream's protocol error comes
// back as a *jsonrpc.Error.
func (m *Manager) Call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	up, tool, ok := strings.Cut(name, Sep)
	if !ok || up == "" || tool == "" {
		return nil, hub.Errorf("call tool", hub.Invalid, "tool name %q is not {server}%s{tool}", name, Sep)
	}
	return m.call(ctx, up, tool, args, nil, nil, nil)
}

func (m *Manager) call(ctx context.Context, upName, tool string, args json.RawMessage, meta mcp.Meta, c *caller, ss *mcp.ServerSession) (*mcp.CallToolResult, error) {
	lookup := func() (*upstream, *exposed) {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.ups[upName], m.exposed[upName][upName+Sep+tool]
	}
	u, e := lookup()
	if u == nil {
		return nil, hub.Errorf("call tool", hub.NotFound, "no enabled upstream named %q: see `parley upstream list`", upName)
	}
	if e == nil && u.status().State != StateReady {
		// Its tools are not known yet (the daemon just started, or the
		// upstream is coming back): wait for it as a call would.
		cfg := u.config()
		wctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout())
		if _, err := u.ready(wctx, nil); err == nil {
			u, e = lookup()
		}
		cancel()
		if u == nil {
			return nil, hub.Errorf("call tool", hub.NotFound, "no enabled upstream named %q: see `parley upstream list`", upName)
		}
	}
	if e == nil {
		if st := u.status(); st.State != StateReady {
			msg := fmt.Sprintf("upstream %q is %s", upName, st.State)
			if st.Error != "" {
				msg += ": " + st.Error
			}
			return nil, hub.Errorf("call tool", hub.Unavailable, "%s", msg)
		}
		return nil, hub.Errorf("call tool", hub.NotFound, "upstream %q has no tool %q (or its tools filter hides it): see `parley tools list --server %s`", upName, tool, upName)
	}
	params := &mcp.CallToolParams{Name: tool}
	if len(args) > 0 && string(args) != "null" {
		params.Arguments = args
	}
	if len(meta) > 0 {
		params.Meta = maps.Clone(meta)
		delete(params.Meta, "progressToken")
	}
	if c != nil {
		// Tokens of different callers may collide: give the upstream our own.
		tok := "parley-" + strconv.FormatInt(m.seq.Add(1), 10)
		params.SetProgressToken(tok)
		m.mu.Lock()
		m.calls[tok] = c
		m.mu.Unlock()
		defer func() {
			m.mu.Lock()
			delete(m.calls, tok)
			m.mu.Unlock()
		}()
	}
	if ss != nil {
		defer u.track(ctx, ss)()
	}
	return u.call(ctx, params)
}

// onProgress forwards an upstream's progress notification to the caller whose
// call it belongs to, under the caller's own token.
func (m *Manager) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	tok, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	m.mu.Lock()
	c := m.calls[tok]
	m.mu.Unlock()
	if c == nil {
		return // the call ended
	}
	p := *req.Params
	p.ProgressToken = c.token
	if err := c.ss.NotifyProgress(c.ctx, &p); err != nil {
		m.log.Debug("forward progress", "err", err)
	}
}
