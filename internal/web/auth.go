package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// csrfHeader carries the session's CSRF token on every state-changing request.
const csrfHeader = "X-Parley-CSRF"

// token is the SHA-256 of a secret: the server keeps hashes only, so a memory
// dump or a log line of its maps gives nothing that signs in.
type token [sha256.Size]byte

func hashOf(secret string) token { return sha256.Sum256([]byte(secret)) }

// newSecret returns 256 random bits, URL-safe.
func newSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// login is an unused login link.
type login struct {
	user    string
	expires time.Time
}

// session is a signed-in browser.
type session struct {
	user    string
	csrf    string
	created time.Time
	expires time.Time
	// id names the session to /auth/prove, which answers with an HMAC of
	// the page's nonce under proof, a key only the page and the daemon
	// hold: the page sends its cookie only to a listener that proved to be
	// this daemon (proof.go).
	id    string
	proof []byte
	// done ends what is open under the session (its event stream, a
	// blocked request) when it is signed out.
	done context.Context
	end  context.CancelFunc
}

// newSessionState gives a session its id, proof key and lifetime. Call
// with s.mu held.
func newSessionState(ss *session) error {
	if ss.id == "" || len(ss.proof) != proofKeyLen {
		var b [8 + proofKeyLen]byte
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("random: %w", err)
		}
		ss.id, ss.proof = hex.EncodeToString(b[:8]), b[8:]
	}
	ss.done, ss.end = context.WithCancel(context.Background())
	return nil
}

// endSession ends what is open under ss. Call with s.mu held.
func endSession(ss *session) {
	if ss.end != nil {
		ss.end()
	}
}

// cookieName is per port: cookies are shared by every port of a host, and two
// daemons (two PARLEY_HOMEs) on one machine must not sign each other out.
func (s *Server) cookieName() string { return "parley_session_" + s.port }

// serveLogin exchanges a login link for a session cookie, once, and sends
// the browser on to the page without the token in its address.
func (s *Server) serveLogin(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		refuse(w, http.StatusMethodNotAllowed, hub.Invalid, "method not allowed")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	raw := r.URL.Query().Get("token")
	s.mu.Lock()
	now := s.opts.Now()
	k := hashOf(raw)
	l, ok := s.logins[k]
	delete(s.logins, k) // used or not, a link works once
	if ok && now.After(l.expires) {
		ok = false
	}
	var cookie string
	var err error
	if ok {
		cookie, err = s.newSession(l.user, now)
	}
	name := s.cookieName()
	s.mu.Unlock()
	if !ok || err != nil {
		if err != nil {
			s.log.Error("dashboard sign-in", "err", err)
		}
		s.log.Warn("dashboard sign-in refused: unknown, used or expired link", "remote", r.RemoteAddr)
		loginRefused(w)
		return
	}
	s.log.Info("dashboard signed in", "user", l.user, "remote", r.RemoteAddr)
	http.SetCookie(w, &http.Cookie{Name: name, Value: cookie, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: int(s.opts.SessionTTL / time.Second)})
	// On to the page, without the token in the address bar; the workspace
	// the link was made in comes along.
	to := "/"
	if ws := r.URL.Query().Get("workspace"); ws != "" && hub.ValidWorkspace(ws) == nil {
		to += "?workspace=" + url.QueryEscape(ws)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// newSession makes a session for user and returns its cookie value. Call
// with s.mu held.
func (s *Server) newSession(user string, now time.Time) (string, error) {
	cookie, err := newSecret()
	if err != nil {
		return "", err
	}
	csrf, err := newSecret()
	if err != nil {
		return "", err
	}
	var oldest token
	var oldestAt time.Time
	for k, ss := range s.sessions {
		if now.After(ss.expires) {
			delete(s.sessions, k)
		} else if oldestAt.IsZero() || ss.created.Before(oldestAt) {
			oldest, oldestAt = k, ss.created
		}
	}
	if len(s.sessions) >= maxSessions {
		endSession(s.sessions[oldest])
		delete(s.sessions, oldest)
	}
	ss := &session{user: user, csrf: csrf, created: now, expires: now.Add(s.opts.SessionTTL)}
	if err := newSessionState(ss); err != nil {
		return "", err
	}
	s.sessions[hashOf(cookie)] = ss
	s.saveState()
	return cookie, nil
}

func loginRefused(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusForbidden)
	io.WriteString(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Parley: sign-in refused</title>`+
		`<link rel="stylesheet" href="/style.css"></head><body class="notice"><main><h1>This sign-in link does not work</h1>`+
		`<p>A link works once and for a few minutes. Run <code>`+html.EscapeString("parley dashboard")+`</code> for a new one.</p></main></body></html>`)
}

// session returns the request's live session, or nil.
func (s *Server) session(r *http.Request) *session {
	c, err := r.Cookie(s.cookieName())
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := hashOf(c.Value)
	ss := s.sessions[k]
	if ss != nil && s.opts.Now().After(ss.expires) {
		endSession(ss)
		delete(s.sessions, k)
		return nil
	}
	return ss
}

// SignOutAll ends every sign-in: open pages are shown the sign-in screen,
// their event streams close, and their cookies sign in nothing any more. It
// returns how many there were.
func (s *Server) SignOutAll() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.sessions)
	for k, ss := range s.sessions {
		endSession(ss)
		delete(s.sessions, k)
	}
	s.saveState()
	s.log.Info("dashboard: every sign-in ended", "sessions", n)
	return n
}

// authorize admits a request of a signed-in browser: a live session cookie,
// an Origin of this listener when the browser sends one (always on a
// WebSocket handshake and on state-changing fetches), and the session's CSRF
// token on every request that can change state.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) (*session, bool) {
	w.Header().Set("Cache-Control", "no-store")
	sess := s.session(r)
	if sess == nil {
		refuse(w, http.StatusUnauthorized, hub.Forbidden, "not signed in: run `parley dashboard` for a sign-in link")
		return nil, false
	}
	o := r.Header.Get("Origin")
	s.mu.Lock()
	originOK := s.origins[o]
	s.mu.Unlock()
	if o != "" && !originOK {
		s.log.Warn("dashboard: cross-origin request refused", "origin", o, "path", r.URL.Path)
		refuse(w, http.StatusForbidden, hub.Forbidden, fmt.Sprintf("cross-origin request from %q refused", o))
		return nil, false
	}
	safe := r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions
	if !safe && subtle.ConstantTimeCompare([]byte(r.Header.Get(csrfHeader)), []byte(sess.csrf)) != 1 {
		s.log.Warn("dashboard: request without a valid CSRF token refused", "method", r.Method, "path", r.URL.Path)
		refuse(w, http.StatusForbidden, hub.Forbidden, "missing or wrong CSRF token: reload the page")
		return nil, false
	}
	return sess, true
}

// sessionInfo is GET /auth/session: who is signed in, and the CSRF token the
// page sends back on state-changing requests.
type sessionInfo struct {
	User    string    `json:"user"`
	Sender  string    `json:"sender"`
	CSRF    string    `json:"csrf"`
	Expires time.Time `json:"expires"`
	// ID and ProofKey let the page ask a listener to prove it is this
	// daemon before it sends its cookie there again (proof.go).
	ID       string `json:"sid"`
	ProofKey string `json:"proof_key"`
}

func (s *Server) serveSession(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		refuse(w, http.StatusMethodNotAllowed, hub.Invalid, "method not allowed")
		return
	}
	sess, ok := s.authorize(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	s.mu.Lock()
	info := sessionInfo{User: sess.user, Sender: hub.HumanPrefix + sess.user, CSRF: sess.csrf, Expires: sess.expires.UTC(),
		ID: sess.id, ProofKey: base64.RawURLEncoding.EncodeToString(sess.proof)}
	s.mu.Unlock()
	writeJSON(w, info)
}

func (s *Server) serveLogout(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		refuse(w, http.StatusMethodNotAllowed, hub.Invalid, "method not allowed")
		return
	}
	if _, ok := s.authorize(w, r); !ok {
		return
	}
	c, _ := r.Cookie(s.cookieName())
	s.mu.Lock()
	if ss := s.sessions[hashOf(c.Value)]; ss != nil {
		endSession(ss)
	}
	delete(s.sessions, hashOf(c.Value))
	s.saveState()
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(), Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	w.WriteHeader(http.StatusNoContent)
}

func writeJSON(w io.Writer, v any) {
	json.NewEncoder(w).Encode(v)
}
