// Package web is the dashboard: one page served from files embedded in the
// binary, on a loopback TCP listener of its own, behind a sign-in that a
// one-time link opens. A signed-in browser acts as a person (sender
// human:NAME): its /api/v1 requests and event stream reach the daemon's JSON
// API through this package, which checks the session cookie, the CSRF token,
// Origin and Host on the way. The daemon imports it; it imports api and hub.
package web

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

//go:embed static
var static embed.FS

// Defaults.
const (
	DefaultLoginTTL   = 5 * time.Minute
	DefaultSessionTTL = 12 * time.Hour
	// maxSessions bounds the sessions kept; signing in past it ends the oldest.
	maxSessions = 64
)

// Options configure a Server; zero values mean defaults.
type Options struct {
	// API serves the daemon's /api/v1; a signed-in browser's requests go there,
	// speaking for the person.
	API http.Handler
	// Addr is the listen address; "" means 127.0.0.1 on the port of the
	// last run (State), else a free one. It must be a loopback address: the
	// dashboard's cookie is its only credential.
	Addr string
	// State is the file that keeps the port and the sign-ins across
	// restarts (state.go); "" keeps them in memory only.
	State      string
	Logger     *slog.Logger     // nil: discard
	LoginTTL   time.Duration    // how long a login link stays valid
	SessionTTL time.Duration    // how long a sign-in lasts
	Now        func() time.Time // nil: time.Now
	// BaseContext is every request's base context (the daemon ends it when
	// it shuts down).
	BaseContext func(net.Listener) context.Context
	// Wrap, if not nil, wraps the listener before it serves (the daemon's
	// answer while it is out of file descriptors).
	Wrap func(net.Listener) net.Listener
	// Admin is the daemon's admin token: sign-ins made under another one
	// end (state.go). Only a hash of it is kept.
	Admin string
}

// Server is the dashboard of one daemon. Its listener starts with the first
// Login and lives until Close.
type Server struct {
	opts Options
	log  *slog.Logger
	app  http.Handler // the static files

	mu        sync.Mutex
	ln        net.Listener
	srv       *http.Server
	port      string
	savedPort string          // the port of the last run (state.go)
	resume    bool            // the last run had sign-ins: listen at once (Resume)
	hosts     map[string]bool // Host headers admitted
	origins   map[string]bool // Origin headers admitted
	logins    map[token]login
	sessions  map[token]*session
	closed    bool
}

// New returns a dashboard server; nothing listens until Login.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.LoginTTL <= 0 {
		opts.LoginTTL = DefaultLoginTTL
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is part of the binary
	}
	s := &Server{opts: opts, log: opts.Logger, app: http.FileServerFS(sub),
		logins: map[token]login{}, sessions: map[token]*session{}}
	s.loadState()
	return s
}

// Login starts the listener unless it runs, and returns a one-time link that
// signs a browser in as the person user (human:USER), and when it expires.
func (s *Server) Login(user string) (string, time.Time, error) {
	const op = "dashboard login"
	if err := hub.ValidName("user name", user); err != nil {
		return "", time.Time{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := s.start(); err != nil {
		return "", time.Time{}, fmt.Errorf("%s: %w", op, err)
	}
	raw, err := newSecret()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s: %w", op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	for k, l := range s.logins {
		if now.After(l.expires) {
			delete(s.logins, k)
		}
	}
	exp := now.Add(s.opts.LoginTTL)
	s.logins[hashOf(raw)] = login{user: user, expires: exp}
	s.log.Info("dashboard login link issued", "user", user, "valid", s.opts.LoginTTL)
	return "http://127.0.0.1:" + s.port + "/login?token=" + raw, exp, nil
}

// Addr is the listener's address, or "" before the first Login.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return hub.Errorf("", hub.Unavailable, "the daemon is shutting down")
	}
	if s.ln != nil {
		return nil
	}
	if s.opts.Addr != "" {
		host, _, err := net.SplitHostPort(s.opts.Addr)
		if err != nil {
			return hub.Errorf("", hub.Invalid, "invalid dashboard address %q: want host:port, e.g. 127.0.0.1:7475", s.opts.Addr)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return hub.Errorf("", hub.Invalid, "dashboard address %q is not loopback: the dashboard listens on 127.0.0.1 or ::1 only", s.opts.Addr)
		}
	}
	ln, err := s.listen()
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.opts.Addr, err)
	}
	port := portOf(ln.Addr())
	s.ln, s.port = ln, port
	if s.savedPort != "" && port != s.savedPort && len(s.sessions) > 0 {
		// A sign-in is good on its port only (proof.go): a cookie that
		// went to whoever holds the old port now signs in nothing here.
		s.log.Warn("dashboard: listening on another port than the last run's: its sign-ins end (open pages must sign in again)", "port", port, "last", s.savedPort, "sessions", len(s.sessions))
		for k, ss := range s.sessions {
			endSession(ss)
			delete(s.sessions, k)
		}
	}
	s.hosts, s.origins = map[string]bool{}, map[string]bool{}
	for _, h := range []string{"127.0.0.1", "localhost", "[::1]"} {
		s.hosts[h+":"+port] = true
		s.origins["http://"+h+":"+port] = true
	}
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       s.opts.BaseContext,
	}
	served := ln
	if s.opts.Wrap != nil {
		served = s.opts.Wrap(ln)
	}
	go func() {
		if err := s.srv.Serve(served); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("dashboard stopped serving", "err", err)
		}
	}()
	s.log.Info("dashboard listening", "addr", ln.Addr().String())
	s.saveState()
	return nil
}

// Shutdown stops the listener, waiting for requests in flight until ctx ends,
// then cuts off the rest.
func (s *Server) Shutdown(ctx context.Context) {
	s.mu.Lock()
	s.closed = true
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return
	}
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
	}
}

// Close stops the listener at once.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	srv := s.srv
	s.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// contentSecurityPolicy lets the page load and reach only what this listener
// serves: no inline script or style, no other origin, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// ServeHTTP is the dashboard listener's handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	s.mu.Lock()
	hostOK := s.hosts[strings.ToLower(r.Host)]
	s.mu.Unlock()
	if !hostOK {
		// DNS rebinding: a page of another site, resolved to 127.0.0.1,
		// would reach us under its own name.
		refuse(w, http.StatusForbidden, hub.Forbidden, fmt.Sprintf("host %q refused: the dashboard answers only as 127.0.0.1, localhost or [::1]", r.Host))
		return
	}
	switch p := r.URL.Path; {
	case p == "/login":
		s.serveLogin(w, r)
	case p == "/auth/session":
		s.serveSession(w, r)
	case p == "/auth/logout":
		s.serveLogout(w, r)
	case p == "/auth/prove":
		s.serveProve(w, r)
	case p == api.Prefix || strings.HasPrefix(p, api.Prefix+"/"):
		s.serveAPI(w, r)
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		// The page itself is public code: without a session it shows how
		// to sign in. Revalidate so an upgraded daemon serves its new page.
		h.Set("Cache-Control", "no-cache")
		s.app.ServeHTTP(w, r)
	default:
		refuse(w, http.StatusMethodNotAllowed, hub.Invalid, "method not allowed")
	}
}

// serveAPI hands a signed-in browser's request to the daemon's API as the
// person, after the checks a browser request needs.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.authorize(w, r)
	if !ok {
		return
	}
	if s.opts.API == nil {
		refuse(w, http.StatusServiceUnavailable, hub.Unavailable, "no API behind this dashboard")
		return
	}
	// What the request holds open ends with the sign-in (SignOutAll): its
	// context, which the event stream watches after its upgrade too.
	s.mu.Lock()
	done := sess.done
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(done, cancel)
	defer stop()
	r2 := r.Clone(api.WithDoor(ctx, hub.DoorDashboard))
	// The API sees a local client speaking for the person: the browser's
	// credentials stop here, and the Origin was checked above.
	r2.Header.Del("Cookie")
	r2.Header.Del("Origin")
	r2.Header.Del(csrfHeader)
	r2.Header.Set(api.HeaderAgent, hub.HumanPrefix+sess.user)
	q := r2.URL.Query()
	if q.Has("agent") {
		q.Del("agent")
		r2.URL.RawQuery = q.Encode()
	}
	s.opts.API.ServeHTTP(w, r2)
}

func refuse(w http.ResponseWriter, code int, kind hub.Kind, msg string) {
	var b api.ErrorBody
	b.Error.Kind, b.Error.Message = kind.String(), msg
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	writeJSON(w, b)
}
