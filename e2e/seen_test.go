package e2e

import (
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/door"
)

// sentLog is what a door test sent, by message id: a token of the
// message's first line, which the letter that tells of it quotes.
type sentLog map[string]string

// noFalseSeen fails the test for each copy (of to, as from sees it) that
// reads seen although no model request carried a letter naming its
// message: a receipt that says the model got what it never got.
func (e *env) noFalseSeen(t *testing.T, dir, from, to string, m *model, sent sentLog) {
	t.Helper()
	for id, token := range sent {
		c := e.copyStatus(t, dir, from, id, to)
		if c.SeenAt == "" {
			continue
		}
		if got := m.find(door.LetterMarker, token); got == "" {
			t.Errorf("message %s (%q) reads seen at %s, and no model request carried its letter", id, token, c.SeenAt)
		} else if !strings.Contains(got, door.LetterMarker) {
			t.Errorf("message %s: the request that names it carries no letter", id)
		}
	}
}
