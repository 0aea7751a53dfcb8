// Package mcpserver serves Parley's MCP tools over Streamable HTTP, grouped in
// profiles (native, sidechat, agentmail, and the ones the daemon registers). It
// binds each session to an identity when the session starts and keeps the tools
// thin: the rules live in hub. The daemon imports it; it imports hub and api.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// DefaultWorkspace is the workspace of a session that names none.
const DefaultWorkspace = "default"

// Identity is who a session speaks for, fixed when the session starts.
type Identity struct {
	Workspace string
	Agent     string // may be empty: such a session can read lists but not send
	Role      string
	Module    string
	Profiles  []string
	// Tmux is where the agent's tmux pane is, when its session started inside
	// tmux; Nudge is the nudge it asked for ("tmux" or "").
	Tmux  TmuxPane
	Nudge string
}

// TmuxPane locates a tmux pane: the server's socket and the pane id.
type TmuxPane struct{ Socket, Pane string }

// Profile adds its tools to srv. A server is shared by every session that asked
// for the same set of profiles, so tools find their caller with IdentityFrom.
type Profile func(srv *mcp.Server)

// Options configure a Server; nil means defaults.
type Options struct {
	Logger  *slog.Logger
	Version string
	// SessionTimeout closes sessions idle this long (no request, none in flight).
	SessionTimeout time.Duration
	// MaxRequestBytes bounds an HTTP request body (default 4 MiB).
	MaxRequestBytes int64
	// ProgressEvery is the keep-alive interval of blocking tools (default 5s).
	ProgressEvery time.Duration
}

// Server is the /mcp endpoint.
type Server struct {
	hub      *hub.Hub
	log      *slog.Logger
	opts     Options
	handler  *mcp.StreamableHTTPHandler
	profiles map[string]Profile
	// options let a profile set server-wide options (completion, resource
	// subscriptions) on the servers that carry it.
	options map[string]func(*mcp.ServerOptions)

	mu       sync.Mutex
	servers  map[string]*mcp.Server // by sorted profile list
	names    map[string][]string    // tool names by profile, for checkClash
	sessions map[string]*Identity   // by MCP session id
}

// New returns the /mcp endpoint over h with the native, sidechat and agentmail
// profiles; more can be added with Register before serving.
func New(h *hub.Hub, opts *Options) *Server {
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
	if o.SessionTimeout == 0 {
		o.SessionTimeout = 30 * time.Minute
	}
	if o.ProgressEvery == 0 {
		o.ProgressEvery = 5 * time.Second
	}
	s := &Server{
		hub: h, log: o.Logger, opts: o,
		profiles: map[string]Profile{},
		servers:  map[string]*mcp.Server{},
		names:    map[string][]string{},
		sessions: map[string]*Identity{},
	}
	s.Register("native", s.native)
	s.Register("sidechat", s.sidechat)
	s.Register("agentmail", s.agentmail)
	s.handler = mcp.NewStreamableHTTPHandler(s.serverFor, &mcp.StreamableHTTPOptions{
		SessionTimeout:      o.SessionTimeout,
		MaxRequestBodyBytes: o.MaxRequestBytes,
		// Origin and Host are checked by the daemon for every endpoint.
		DisableLocalhostProtection: true,
	})
	return s
}

// Register adds a profile. Call it before the server serves.
func (s *Server) Register(name string, p Profile) { s.profiles[name] = p }

// RegisterOptions lets profile name adjust the options of every server that
// carries it (handlers that are options, not tools). Call it before serving.
func (s *Server) RegisterOptions(name string, fn func(*mcp.ServerOptions)) {
	if s.options == nil {
		s.options = map[string]func(*mcp.ServerOptions){}
	}
	s.options[name] = fn
}

// Profiles lists the registered profile names.
func (s *Server) Profiles() []string {
	names := make([]string, 0, len(s.profiles))
	for n := range s.profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Sessions counts the open MCP sessions.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

type ctxKey int

const (
	identityKey ctxKey = iota
	pendingKey
)

// IdentityFrom returns the identity of the session a tool call belongs to.
func IdentityFrom(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey).(*Identity)
	if id == nil {
		return &Identity{Workspace: DefaultWorkspace}
	}
	return id
}

// pending carries a new session's identity from ServeHTTP to serverFor and to
// the session id the SDK picks.
type pending struct {
	id  *Identity
	srv *mcp.Server
}

// ServeHTTP serves POST, GET and DELETE /mcp.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Mcp-Session-Id") != "" {
		s.handler.ServeHTTP(w, r)
		return
	}
	// A request without a session starts one: bind its identity now.
	id, err := s.identityOf(r)
	if err != nil {
		http.Error(w, err.Error(), api.HTTPStatus(hub.KindOf(err)))
		return
	}
	p := &pending{id: id}
	r = r.WithContext(context.WithValue(r.Context(), pendingKey, p))
	s.handler.ServeHTTP(&sessionCapture{ResponseWriter: w, s: s, p: p}, r)
}

// identityOf reads the identity headers (or query parameters) of a new session
// and registers the agent when it is new.
func (s *Server) identityOf(r *http.Request) (*Identity, error) {
	get := func(header, query string) string {
		if v := r.Header.Get(header); v != "" {
			return v
		}
		return r.URL.Query().Get(query)
	}
	id := &Identity{
		Workspace: get(api.HeaderWorkspace, "workspace"),
		Agent:     get(api.HeaderAgent, "agent"),
		Role:      get(api.HeaderRole, "role"),
		Module:    get(api.HeaderModule, "module"),
		Tmux:      TmuxPane{Socket: r.Header.Get(api.HeaderTmuxSocket), Pane: r.Header.Get(api.HeaderTmuxPane)},
		Nudge:     r.Header.Get(api.HeaderNudge),
	}
	if id.Workspace == "" {
		id.Workspace = DefaultWorkspace
	}
	if err := hub.ValidWorkspace(id.Workspace); err != nil {
		return nil, err
	}
	profiles := get(api.HeaderProfile, "profile")
	if profiles == "" {
		profiles = "native"
	}

	for _, p := range strings.Split(profiles, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if _, ok := s.profiles[p]; !ok {
			return nil, hub.Errorf("mcp", hub.Invalid, "unknown profile %q: want one of %s", p, strings.Join(s.Profiles(), ", "))
		}
		if !slices.Contains(id.Profiles, p) {
			id.Profiles = append(id.Profiles, p)
		}
	}
	sort.Strings(id.Profiles)
	if err := s.checkClash(r.Context(), id.Profiles); err != nil {
		return nil, err
	}
	if id.Agent == "" {
		return id, nil
	}
	// Register on the fly: a new name joins (with its role, or the default
	// one); a known one keeps its role unless a role was given.
	ctx := r.Context()
	a, err := s.hub.Store().Agent(ctx, id.Workspace, id.Agent)
	switch {
	case err == nil && (id.Role == "" || id.Role == a.Role) && (id.Module == "" || id.Module == a.Module):
		id.Role, id.Module = a.Role, a.Module
	case err == nil || hub.IsNotFound(err):
		a, err = s.hub.Join(ctx, hub.JoinRequest{Workspace: id.Workspace, Name: id.Agent, Role: id.Role, Module: id.Module})
		if err != nil {
			return nil, err
		}
		id.Role, id.Module = a.Role, a.Module
	default:
		return nil, err
	}
	return id, nil
}

// serverFor is the SDK's getServer: the shared server for the session's profiles.
// Requests of an existing session get the native server, which the SDK only
// asks for its protocol versions.
func (s *Server) serverFor(r *http.Request) *mcp.Server {
	p, _ := r.Context().Value(pendingKey).(*pending)
	if p == nil {
		return s.server([]string{"native"})
	}
	if p.srv == nil {
		p.srv = s.server(p.id.Profiles)
	}
	return p.srv
}

func (s *Server) server(profiles []string) *mcp.Server {
	key := strings.Join(profiles, ",")
	s.mu.Lock()
	defer s.mu.Unlock()
	if srv := s.servers[key]; srv != nil {
		return srv
	}
	so := &mcp.ServerOptions{
		Instructions:       instructions,
		Logger:             s.log,
		InitializedHandler: s.initialized,
		Capabilities:       &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Tools: &mcp.ToolCapabilities{ListChanged: true}},
	}
	for _, p := range profiles {
		if fn := s.options[p]; fn != nil {
			fn(so)
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "parley", Title: "Parley", Version: s.opts.Version}, so)
	srv.AddReceivingMiddleware(s.bindIdentity)
	for _, p := range profiles {
		s.profiles[p](srv)
	}
	s.servers[key] = srv
	return srv
}

// checkClash refuses a set of profiles in which two define a tool of the same
// name (native and manager both have list_agents; native and sidechat both
// have send_message): one would silently replace the other.
func (s *Server) checkClash(ctx context.Context, profiles []string) error {
	if len(profiles) < 2 {
		return nil
	}
	owner := map[string]string{}
	for _, p := range profiles {
		names, err := s.toolNames(ctx, p)
		if err != nil {
			return err
		}
		for _, n := range names {
			if o, ok := owner[n]; ok {
				return hub.Errorf("mcp", hub.Invalid, "profiles %s and %s both define the tool %s: use them in separate sessions (separate MCP server entries)", o, p, n)
			}
			owner[n] = p
		}
	}
	return nil
}

// toolNames lists the tools a profile registers, asking a scratch server of
// that profile alone once through an in-memory session.
func (s *Server) toolNames(ctx context.Context, profile string) ([]string, error) {
	s.mu.Lock()
	names, ok := s.names[profile]
	s.mu.Unlock()
	if ok {
		return names, nil
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "scratch", Version: "0"}, nil)
	s.profiles[profile](srv)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, fmt.Errorf("list tools of profile %s: %w", profile, err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "scratch", Version: "0"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return nil, fmt.Errorf("list tools of profile %s: %w", profile, err)
	}
	defer cs.Close()
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools of profile %s: %w", profile, err)
		}
		names = append(names, t.Name)
	}
	s.mu.Lock()
	s.names[profile] = names
	s.mu.Unlock()
	return names, nil
}

const instructions = "Parley is a message bus for coding agents. Send with send_message (to a name, @role, @group or @everyone); read with check_messages; block for the next message with wait_for_message. Messages are consumed when read."

// sessionCapture records the session id the SDK assigns to a new session
// before the response (and so the id) reaches the client.
type sessionCapture struct {
	http.ResponseWriter
	s    *Server
	p    *pending
	done bool
}

func (c *sessionCapture) WriteHeader(code int) {
	c.capture()
	c.ResponseWriter.WriteHeader(code)
}

func (c *sessionCapture) Write(b []byte) (int, error) {
	c.capture()
	return c.ResponseWriter.Write(b)
}

func (c *sessionCapture) Flush() {
	c.capture()
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *sessionCapture) Unwrap() http.ResponseWriter { return c.ResponseWriter }

func (c *sessionCapture) capture() {
	if c.done {
		return
	}
	c.done = true
	if sid := c.Header().Get("Mcp-Session-Id"); sid != "" {
		c.s.mu.Lock()
		c.s.sessions[sid] = c.p.id
		c.s.mu.Unlock()
	}
}

// initialized counts the session toward its agent's presence until it ends.
func (s *Server) initialized(ctx context.Context, req *mcp.InitializedRequest) {
	ss := req.Session
	s.mu.Lock()
	id := s.sessions[ss.ID()]
	s.mu.Unlock()
	if id == nil {
		return
	}
	s.hub.SessionOpened(id.Workspace, id.Agent)
	go func() {
		ss.Wait()
		s.mu.Lock()
		delete(s.sessions, ss.ID())
		s.mu.Unlock()
		s.hub.SessionClosed(id.Workspace, id.Agent)
	}()
}

// bindIdentity puts the session's identity in the context of every request.
func (s *Server) bindIdentity(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
			s.mu.Lock()
			id := s.sessions[ss.ID()]
			s.mu.Unlock()
			if id != nil {
				ctx = context.WithValue(ctx, identityKey, id)
			}
		}
		return next(ctx, method, req)
	}
}

// ---- schemas ----

var schemaOpts = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {},
	reflect.TypeFor[time.Time]():       {Type: "string"},
}}

// schemaFor infers T's JSON schema, with json.RawMessage as "any JSON".
func schemaFor[T any]() *jsonschema.Schema {
	sch, err := jsonschema.For[T](schemaOpts)
	if err != nil {
		panic(fmt.Sprintf("schema for %T: %v", *new(T), err))
	}
	return sch
}

// addTool registers a typed tool with schemas inferred once.
func addTool[In, Out any](srv *mcp.Server, name, desc string, h mcp.ToolHandlerFor[In, Out]) {
	in := cachedSchema[In]()
	dropNullUnions(in)
	out := cachedSchema[Out]()
	inRes, err := in.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", name, err))
	}
	outRes, err := out.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: output schema: %v", name, err))
	}
	t := &mcp.Tool{Name: name, Description: desc, InputSchema: in, OutputSchema: out}
	srv.AddTool(t, typedHandler(inRes, outRes, h))
}

// typedHandler does for a typed handler what mcp.AddTool does (validate the
// arguments against the input schema, decode them, validate the output and
// render it as structured content and text) with encoding/json. The SDK's
// own decoder allocates a 32 KiB buffer for every value it decodes, and a
// typed tool call decodes several: on the hot path of every send and wake-up
// that was most of the daemon's allocation, and a third of its CPU in GC.
func typedHandler[In, Out any](inRes, outRes *jsonschema.Resolved, h mcp.ToolHandlerFor[In, Out]) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := []byte(req.Params.Arguments)
		if len(args) == 0 || string(args) == "null" {
			args = []byte("{}")
		}
		var in In
		var generic any
		if err := json.Unmarshal(args, &generic); err != nil {
			return toolError(fmt.Errorf("validating \"arguments\": %v", err)), nil
		}
		if err := inRes.Validate(generic); err != nil {
			return toolError(fmt.Errorf("validating \"arguments\": %v", err)), nil
		}
		if err := json.Unmarshal(args, &in); err != nil {
			return toolError(fmt.Errorf("validating \"arguments\": %v", err)), nil
		}
		res, out, err := h(ctx, req, in)
		if err != nil {
			var rpcErr *jsonrpc.Error
			if errors.As(err, &rpcErr) && err == error(rpcErr) {
				return nil, rpcErr // a protocol error, as with mcp.AddTool
			}
			return toolError(err), nil
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("marshal tool output: %w", err)
		}
		var check any
		if err := json.Unmarshal(b, &check); err != nil {
			return nil, fmt.Errorf("check tool output: %w", err)
		}
		if err := outRes.Validate(check); err != nil {
			return nil, fmt.Errorf("validating tool output: %w", err)
		}
		res.StructuredContent = json.RawMessage(b)
		if len(res.Content) == 0 {
			res.Content = []mcp.Content{&mcp.TextContent{Text: string(b)}}
		}
		return res, nil
	}
}

// dropNullUnions turns the ["null", T] types that optional pointer inputs
// infer into plain T: some clients (Gemini's among them) reject type unions in
// tool inputs, and an absent optional input means the same as null.
func dropNullUnions(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	for _, p := range s.Properties {
		dropNullUnions(p)
	}
	dropNullUnions(s.Items)
}

var schemaCache sync.Map // reflect.Type -> *jsonschema.Schema

func cachedSchema[T any]() *jsonschema.Schema {
	t := reflect.TypeFor[T]()
	if v, ok := schemaCache.Load(t); ok {
		return v.(*jsonschema.Schema).CloneSchemas()
	}
	sch := schemaFor[T]()
	schemaCache.Store(t, sch)
	return sch.CloneSchemas()
}

// AgentSession is what the open sessions of an agent say about where it runs.
type AgentSession struct {
	Tmux  TmuxPane
	Nudge string
}

// AgentSession reports the tmux pane and nudge choice of one of the agent's
// open sessions that has a tmux pane (an agent normally has one); ok is false
// when none has.
// The daemon's nudger asks it; nothing of it is stored.
func (s *Server) AgentSession(ws, agent string) (AgentSession, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range s.sessions {
		if id.Workspace == ws && id.Agent == agent && id.Tmux.Pane != "" {
			return AgentSession{Tmux: id.Tmux, Nudge: id.Nudge}, true
		}
	}
	return AgentSession{}, false
}
