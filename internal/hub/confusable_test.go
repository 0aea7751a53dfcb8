package hub_test

import (
	"context"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/hub"
)

func TestJoinRefusesConfusableNames(t *testing.T) {
	h := newHub(t, nil)
	ctx := context.Background()
	join(t, h, "w", "bob", "dev")
	join(t, h, "w", "alice", "dev")
	for _, tt := range []struct{ name, why string }{
		{"bоb", "Cyrillic о"},
		{"bοb", "Greek ο"},
		{"ｂｏｂ", "fullwidth"},
		{"Bob", "case"},
		{"b0b", "zero for o"},
		{"bób", "accent"},
		{"аlice", "Cyrillic а"},
		{"a1ice", "one for l"},
		{"aIice", "capital I for l"},
	} {
		t.Run(tt.why, func(t *testing.T) {
			_, err := h.Join(ctx, hub.JoinRequest{Workspace: "w", Name: tt.name})
			if hub.KindOf(err) != hub.Conflict || !strings.Contains(err.Error(), "looks like the existing agent") {
				t.Errorf("join %q: got %v, want a conflict naming the look-alike", tt.name, err)
			}
		})
	}
	// Distinct names, a rejoin, and the same name in another workspace are fine.
	for _, r := range []hub.JoinRequest{{Workspace: "w", Name: "bobby"}, {Workspace: "w", Name: "bob", Role: "lead"}, {Workspace: "other", Name: "bоb"}, {Workspace: "w", Name: "carol"}} {
		if _, err := h.Join(ctx, r); err != nil {
			t.Errorf("join %+v: %v", r, err)
		}
	}
	// The message says which character differs.
	_, err := h.Join(ctx, hub.JoinRequest{Workspace: "w", Name: "bоb"})
	if err == nil || !strings.Contains(err.Error(), "U+043E, Cyrillic") {
		t.Errorf("got %v, want the Cyrillic letter named", err)
	}
}

func FuzzSkeleton(f *testing.F) {
	for _, s := range []string{"bob", "bоb", "ｂｏｂ", "Ǆ", "ﬁle", "𝐛𝐨𝐛", "e\u0301"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, a string) {
		sa := hub.Skeleton(a)
		if hub.Skeleton(a) != sa {
			t.Fatalf("Skeleton(%q) not deterministic", a)
		}
		// Plain lower-case ASCII names without 0 and 1 are their own skeleton.
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyz._-23456789") == "" && sa != a {
			t.Fatalf("Skeleton(%q) = %q, want it unchanged", a, sa)
		}
		// A skeleton is a canonical form: it is its own skeleton.
		if again := hub.Skeleton(sa); again != sa {
			t.Fatalf("Skeleton(%q) = %q, but Skeleton(%q) = %q", a, sa, sa, again)
		}
	})
}
