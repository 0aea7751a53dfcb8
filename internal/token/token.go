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
	"strings"
	"time"
)

// Prefix starts every agent token, so one is recognisable in a config file or
// a leaked log line.
const Prefix = "parley_at_"

// Token is an agent token's record: everything but the secret.
type Token struct {
	ID        string // short, public: what list shows and revoke takes
	Workspace string
	Agent     string
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

// New returns a new token record for agent in ws, its secret and the hash to
// store.
func New(ws, agent string, now time.Time) (t *Token, secret string, hash []byte) {
	id := make([]byte, 6)
	rand.Read(id)
	raw := make([]byte, 32)
	rand.Read(raw)
	secret = Prefix + hex.EncodeToString(raw)
	return &Token{ID: hex.EncodeToString(id), Workspace: ws, Agent: agent, CreatedAt: now.UTC()}, secret, Hash(secret)
}

// Hash is what the store keeps of a secret.
func Hash(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// IsAgentToken reports whether s has the shape of an agent token (it may still
// be unknown or revoked).
func IsAgentToken(s string) bool { return strings.HasPrefix(s, Prefix) }
