package web

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"time"

	"github.com/parley-dev/parley/internal/safefile"
)

// A page that survives a daemon restart (issue 28): the dashboard keeps its
// port and its sign-ins in a state file ($PARLEY_HOME/dashboard.json, 0600),
// so that a restarted daemon listens where the open page looks for it, and
// the page's cookie still signs it in. The file holds the SHA-256 of each
// session cookie, never the cookie: it signs nobody in by itself. It holds
// each session's proof key (proof.go) and a hash of the admin token the
// sessions were made under; a run on another port, or under another admin
// token, ends them.

// stateFile is the dashboard's state as kept on disk.
type stateFile struct {
	Port string `json:"port"`
	// Admin is a hash of the admin token the sessions were made under: a
	// new token (a rotation) ends them.
	Admin    string         `json:"admin,omitempty"`
	Sessions []savedSession `json:"sessions,omitempty"`
}

type savedSession struct {
	Hash     string    `json:"hash"` // hex SHA-256 of the cookie
	User     string    `json:"user"`
	CSRF     string    `json:"csrf"`
	Created  time.Time `json:"created"`
	Expires  time.Time `json:"expires"`
	ID       string    `json:"id,omitempty"`
	ProofKey string    `json:"proof_key,omitempty"` // hex
}

// adminMark is what the state file keeps of the admin token.
func (s *Server) adminMark() string {
	if s.opts.Admin == "" {
		return ""
	}
	h := sha256.Sum256([]byte("parley dashboard sign-ins\x00" + s.opts.Admin))
	return hex.EncodeToString(h[:])
}

// maxStateFile bounds what is read of the state file.
const maxStateFile = 1 << 20

// loadState reads the state file, if any: the port it listened on and the
// sessions still live. A damaged file is set aside (logged): it costs the
// browsers their sign-in, nothing else.
func (s *Server) loadState() {
	if s.opts.State == "" {
		return
	}
	b, err := os.ReadFile(s.opts.State)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var st stateFile
	if err == nil && len(b) > maxStateFile {
		err = fmt.Errorf("over %d bytes", maxStateFile)
	}
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		s.log.Warn("dashboard state unreadable: starting afresh", "path", s.opts.State, "err", err)
		return
	}
	if _, err := fmt.Sscan(st.Port, new(uint16)); err == nil {
		s.savedPort = st.Port
	}
	// Pages were signed in: the listener comes back for them, to let them
	// in again or to tell them they were signed out.
	s.resume = len(st.Sessions) > 0
	if mark := s.adminMark(); mark != "" && st.Admin != mark && len(st.Sessions) > 0 {
		s.log.Warn("dashboard: the admin token changed since the last run: its sign-ins end", "sessions", len(st.Sessions))
		return
	}
	now := s.opts.Now()
	for _, ss := range st.Sessions {
		raw, err := hex.DecodeString(ss.Hash)
		if err != nil || len(raw) != len(token{}) || now.After(ss.Expires) || ss.User == "" {
			continue
		}
		var k token
		copy(k[:], raw)
		key, _ := hex.DecodeString(ss.ProofKey)
		x := &session{user: ss.User, csrf: ss.CSRF, created: ss.Created, expires: ss.Expires, id: ss.ID, proof: key}
		if newSessionState(x) != nil {
			continue
		}
		s.sessions[k] = x
	}
}

// saveState writes the port and the live sessions. Call with s.mu held.
func (s *Server) saveState() {
	if s.opts.State == "" || s.port == "" {
		return
	}
	now := s.opts.Now()
	st := stateFile{Port: s.port, Admin: s.adminMark()}
	for k, ss := range s.sessions {
		if now.After(ss.expires) {
			continue
		}
		st.Sessions = append(st.Sessions, savedSession{Hash: hex.EncodeToString(k[:]), User: ss.user, CSRF: ss.csrf,
			Created: ss.created, Expires: ss.expires, ID: ss.id, ProofKey: hex.EncodeToString(ss.proof)})
	}
	b, _ := json.Marshal(st) // strings and times: it cannot fail
	if err := safefile.WriteFile(s.opts.State, b, 0o600); err != nil {
		s.log.Warn("save dashboard state", "path", s.opts.State, "err", err)
	}
}

// listen opens the listener: the configured address, else the port of the
// last run (so that an open page finds the daemon again), else a free
// port. A port of the last run that another program took now gives way to
// a free one; a configured address that cannot be had is an error.
func (s *Server) listen() (net.Listener, error) {
	if s.opts.Addr != "" {
		return net.Listen("tcp", s.opts.Addr)
	}
	if s.savedPort != "" {
		ln, err := net.Listen("tcp", "127.0.0.1:"+s.savedPort)
		if err == nil {
			return ln, nil
		}
		s.log.Warn("dashboard: the port of the last run is taken: listening on another (open pages must sign in again)", "port", s.savedPort, "err", err)
	}
	return net.Listen("tcp", "127.0.0.1:0")
}

// Resume starts the listener at once when browsers were signed in when the
// daemon last stopped, so that their pages reconnect (or, their sign-ins
// ended, hear that they must sign in again); else it waits for the first
// Login.
func (s *Server) Resume() error {
	s.mu.Lock()
	live := 0
	now := s.opts.Now()
	for _, ss := range s.sessions {
		if !now.After(ss.expires) {
			live++
		}
	}
	resume := s.resume
	s.mu.Unlock()
	if live == 0 && !resume {
		return nil
	}
	return s.start()
}
