package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/token"
)

// runTokens runs the contract of token.Store. open must return a new, empty
// store for each call; the caller closes it.
func runTokens(t *testing.T, open func(t *testing.T) token.Store) {
	t.Run("Tokens", func(t *testing.T) {
		t.Parallel()
		testTokens(t, open(t))
	})
}

func testTokens(t *testing.T, s token.Store) {
	c := ctx(t)
	if ts, err := s.Tokens(c); err != nil || len(ts) != 0 {
		t.Fatalf("Tokens of an empty store: got %v, %v; want none", ts, err)
	}
	alice, aliceSecret, aliceHash := token.New("ws", "alice", "reviewer", t0)
	bob, bobSecret, bobHash := token.New("other", "bob", "", t0.Add(time.Second))
	if aliceSecret == bobSecret || !token.IsAgentToken(aliceSecret) {
		t.Fatalf("token.New: secrets %q and %q; want two distinct agent tokens", aliceSecret, bobSecret)
	}
	for _, x := range []struct {
		tok  *token.Token
		hash []byte
	}{{alice, aliceHash}, {bob, bobHash}} {
		if err := s.CreateToken(c, x.tok, x.hash); err != nil {
			t.Fatalf("CreateToken(%s): %v", x.tok.Agent, err)
		}
	}
	dup := *alice
	dup.ID = "another"
	if err := s.CreateToken(c, &dup, aliceHash); err == nil {
		t.Errorf("CreateToken with a hash that exists: got no error, want a conflict")
	}

	got, err := s.TokenByHash(c, token.Hash(aliceSecret))
	if err != nil || got.ID != alice.ID || got.Agent != "alice" || got.Workspace != "ws" || got.Role != "reviewer" || !got.CreatedAt.Equal(t0) {
		t.Errorf("TokenByHash(alice's secret): got %+v, %v; want alice's token in ws, as a reviewer", got, err)
	}
	_, err = s.TokenByHash(c, token.Hash(aliceSecret+"x"))
	wantKind(t, "TokenByHash of an unknown secret", err, hub.NotFound)

	ts, err := s.Tokens(c)
	var ids []string
	for _, tk := range ts {
		ids = append(ids, tk.ID)
	}
	if err != nil || !slices.Equal(ids, []string{alice.ID, bob.ID}) || ts[0].Role != "reviewer" || ts[1].Role != "" {
		t.Errorf("Tokens: got %v, %v; want alice's (a reviewer) then bob's (no role)", ids, err)
	}

	if err := s.RevokeToken(c, alice.ID); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	_, err = s.TokenByHash(c, aliceHash)
	wantKind(t, "TokenByHash of a revoked token", err, hub.NotFound)
	wantKind(t, "RevokeToken twice", s.RevokeToken(c, alice.ID), hub.NotFound)
	if got, err := s.TokenByHash(c, bobHash); err != nil || got.Agent != "bob" {
		t.Errorf("TokenByHash(bob) after revoking alice's: got %+v, %v; want bob's", got, err)
	}
}
