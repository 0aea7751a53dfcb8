// Package token issues the credentials that bind a TCP session to one agent.
//
// An agent token is a random secret given once to whoever runs `parley token
// create`; the store keeps only its SHA-256 (the secret has 256 bits of
// entropy, so a fast hash is as good as a slow one: nothing to guess). A
// request over TCP with an agent token acts as that agent in that workspace and
// cannot claim another; the admin token ($PARLEY_HOME/token) keeps full access;
// the Unix socket trusts its OS user. The daemon imports this package; the
// stores implement Store.
package token

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// Prefix starts every agent token, so one is recognisable in a config file or
// a leaked log line.
const Prefix = "parley_at_"

// Token is an agent token's record: everything but the secret.
type Token struct {
	ID        string // short, public: what list shows and revoke takes
	Workspace string
	Agent     string
	// Role is the role its agent has when it uses the token: a session
	// cannot claim another. Empty (a token from before roles were bound):
	// the agent keeps the role it has, and no session may change it.
	Role      string
	CreatedAt time.Time
}

// Store keeps agent tokens by the hash of their secret. Every method is safe
// for concurrent use; errors use the hub's kinds.
type Store interface {
	// CreateToken stores t under hash; Conflict if the id or hash exists.
	CreateToken(ctx context.Context, t *Token, hash []byte) error
	// TokenByHash returns the live token whose secret hashes to hash, or NotFound.
	TokenByHash(ctx context.Context, hash []byte) (*Token, error)
	// Tokens lists the live tokens, oldest first.
	Tokens(ctx context.Context) ([]*Token, error)
	// RevokeToken deletes the token with the id; NotFound if there is none.
	RevokeToken(ctx context.Context, id string) error
}

// New returns a new token record for agent in ws with role, its secret and
// the hash to store.
func New(ws, agent, role string, now time.Time) (t *Token, secret string, hash []byte) {
	id := make([]byte, 6)
	rand.Read(id)
	raw := make([]byte, 32)
	rand.Read(raw)
	secret = Prefix + hex.EncodeToString(raw)
	return &Token{ID: hex.EncodeToString(id), Workspace: ws, Agent: agent, Role: role, CreatedAt: now.UTC()}, secret, Hash(secret)
}

// Hash is what the store keeps of a secret.
func Hash(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// IsAgentToken reports whether s has the shape of an agent token (it may still
// be unknown or revoked).
func IsAgentToken(s string) bool { return strings.HasPrefix(s, Prefix) }

// ErrRevoked ends what was open under a token when it is revoked: a blocked
// wait returns it, taking nothing.
var ErrRevoked = &hub.Error{Kind: hub.Forbidden, Err: errors.New("this agent token was revoked: what it held open has ended; ask for a new token")}

// Watcher ends what is open under agent tokens (requests in progress, MCP
// sessions, streams) when their token is revoked, here or, through the
// store's notifications, on another daemon sharing the store. A revocation
// otherwise takes effect on the next request only: a stream that is open,
// or a wait already blocked, would go on.
type Watcher struct {
	mu   sync.Mutex
	open map[string]map[*watch]struct{} // by token id
	// gone are the ids revoked so far: what starts under one after its
	// lookup, as it was revoked, ends at once. (Ids are never reused.)
	gone map[string]bool
}

type watch struct{ end func() }

// Watch runs end once if the token with the id is revoked before stop is
// called. end must not block. A nil Watcher watches nothing.
func (w *Watcher) Watch(id string, end func()) (stop func()) {
	if w == nil {
		return func() {}
	}
	x := &watch{end: end}
	w.mu.Lock()
	if w.gone[id] {
		w.mu.Unlock()
		end()
		return func() {}
	}
	if w.open == nil {
		w.open = map[string]map[*watch]struct{}{}
	}
	if w.open[id] == nil {
		w.open[id] = map[*watch]struct{}{}
	}
	w.open[id][x] = struct{}{}
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.open[id], x)
		if len(w.open[id]) == 0 {
			delete(w.open, id)
		}
	}
}

// Revoked ends everything open under the token with the id.
func (w *Watcher) Revoked(id string) {
	w.mu.Lock()
	xs := w.open[id]
	delete(w.open, id)
	if w.gone == nil {
		w.gone = map[string]bool{}
	}
	w.gone[id] = true
	w.mu.Unlock()
	for x := range xs {
		x.end()
	}
}

// Check ends what is open under tokens that s no longer has: for a daemon
// that may have missed another's notice of a revocation.
func (w *Watcher) Check(ctx context.Context, s Store) error {
	w.mu.Lock()
	if len(w.open) == 0 {
		w.mu.Unlock()
		return nil
	}
	w.mu.Unlock()
	live, err := s.Tokens(ctx)
	if err != nil {
		return err
	}
	ok := make(map[string]bool, len(live))
	for _, t := range live {
		ok[t.ID] = true
	}
	w.mu.Lock()
	var gone []string
	for id := range w.open {
		if !ok[id] {
			gone = append(gone, id)
		}
	}
	w.mu.Unlock()
	for _, id := range gone {
		w.Revoked(id)
	}
	return nil
}
