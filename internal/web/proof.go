package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net"
	"net/http"
	"strconv"
	"unicode"

	"github.com/parley-dev/parley/internal/hub"
)

// A sign-in is bound to the daemon, not to a port (issue 40). While the
// daemon restarts, another local user can take its port: a page that
// reconnected at once would send its cookie there, and the cookie, renamed
// for the daemon's new port, would sign that user in. So:
//
//   - before it reconnects, the page asks the listener to prove that it is
//     this daemon: GET /auth/prove?sid=ID&nonce=N, without its cookie,
//     answered with HMAC-SHA256(key, "parley-dashboard-proof\n" PORT "\n"
//     N) under the session's proof key, which only the page (from
//     /auth/session) and the daemon hold. PORT is the daemon's own: a
//     listener that relays the question to the daemon elsewhere gets an
//     answer for the daemon's port, not for the one the page is on;
//   - a session is good on the port it was made on only: a daemon that
//     cannot listen on its last port again ends the sign-ins of the last
//     run (web.go, start), so a cookie taken on the old port signs in
//     nothing on the new one;
//   - a change of the admin token ends every sign-in (state.go), and so
//     does `parley dashboard --sign-out-all` (SignOutAll).

// proofKeyLen is the size of a session's proof key.
const proofKeyLen = 32

// proofMessage is what a proof signs.
func proofMessage(port, nonce string) []byte {
	return []byte("parley-dashboard-proof\n" + port + "\n" + nonce)
}

// serveProve answers a page's question "are you my daemon?" for the
// session named by sid, without its cookie. An unknown session is 404: the
// page shows the sign-in screen, sending nothing.
func (s *Server) serveProve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet {
		refuse(w, http.StatusMethodNotAllowed, hub.Invalid, "method not allowed")
		return
	}
	q := r.URL.Query()
	sid, nonce := q.Get("sid"), q.Get("nonce")
	if len(nonce) < 16 || len(nonce) > 128 || !printable(nonce) {
		refuse(w, http.StatusBadRequest, hub.Invalid, "nonce: want 16 to 128 printable characters")
		return
	}
	s.mu.Lock()
	var key []byte
	now := s.opts.Now()
	for _, ss := range s.sessions {
		if ss.id == sid && sid != "" && !now.After(ss.expires) {
			key = ss.proof
			break
		}
	}
	port := s.port
	s.mu.Unlock()
	if key == nil {
		refuse(w, http.StatusNotFound, hub.NotFound, "no such sign-in: run `parley dashboard` for a sign-in link")
		return
	}
	m := hmac.New(sha256.New, key)
	m.Write(proofMessage(port, nonce))
	w.Header().Set("Content-Type", "application/json")
	writeJSON(w, map[string]string{"proof": base64.RawURLEncoding.EncodeToString(m.Sum(nil)), "port": port})
}

func printable(s string) bool {
	for _, r := range s {
		if r > unicode.MaxASCII || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// portOf is the port of a listen address.
func portOf(addr net.Addr) string {
	if a, ok := addr.(*net.TCPAddr); ok {
		return strconv.Itoa(a.Port)
	}
	_, p, _ := net.SplitHostPort(addr.String())
	return p
}
